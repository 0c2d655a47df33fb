package ebpf

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"ustore/lock"
	"ustore/trace"
)

// Collector publishes the BPF histograms on /metrics at scrape time
// (prometheus.MustNewConstHistogram: OpenTelemetry's API has no
// instrument for a histogram bucketed elsewhere), in seconds, with the
// Go-side histograms' boundaries (trace.DurationBounds), so that
// ustore_ebpf_lock_wait_seconds and ustore_lock_wait_duration_seconds
// compare bucket for bucket. BPF bucket k holds [2^k, 2^(k+1)) ns, so the
// boundary 2^(k+1) closes it; values past the last boundary count in +Inf
// only.
type Collector struct {
	p *Probes

	lockWait, phase, uring, klock, offcpu, events *prometheus.Desc
}

// NewCollector returns the collector of p's histograms. Once p is closed it
// publishes nothing.
func NewCollector(p *Probes) *Collector {
	return &Collector{
		p: p,
		lockWait: prometheus.NewDesc("ustore_ebpf_lock_wait_seconds",
			"Waits of contended ustore locks as BPF measured them (uprobes on the lock-wait markers), by lock class and mode.",
			[]string{"class", "mode"}, nil),
		phase: prometheus.NewDesc("ustore_ebpf_phase_seconds",
			"Commit phases, whole commits (phase=commit) and log syncs (phase=log_sync) as BPF measured them (uprobes on the phase markers).",
			[]string{"phase"}, nil),
		uring: prometheus.NewDesc("ustore_ebpf_io_uring_op_seconds",
			"Submit-to-completion time of this process's io_uring requests as the kernel saw them (tp_btf io_uring_submit_req/io_uring_complete), by opcode.",
			[]string{"op"}, nil),
		klock: prometheus.NewDesc("ustore_ebpf_kernel_lock_wait_seconds",
			"Kernel lock contention of this process's threads (tp_btf lock:contention_begin/end), by contention flags.",
			[]string{"flags"}, nil),
		offcpu: prometheus.NewDesc("ustore_ebpf_reactor_offcpu_seconds",
			"Off-CPU time of the io_uring reactor threads (tp_btf sched_switch), by reason: wait (slept: idle, or waiting for the device) or preempted (runnable, waiting for a CPU).",
			[]string{"reason"}, nil),
		events: prometheus.NewDesc("ustore_ebpf_lock_wait_events_total",
			"Lock waits over the threshold read from the ring buffer, by what became of them.",
			[]string{"outcome"}, nil),
	}
}

// Describe sends the descriptors.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.lockWait, c.phase, c.uring, c.klock, c.offcpu, c.events} {
		ch <- d
	}
}

// Collect reads the BPF maps and sends one histogram per class.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	if hs, err := c.p.LockWaits(); err == nil {
		for kind, h := range hs {
			_, _, _, write := lock.KindFields(kind)
			ch <- constHistogram(c.lockWait, h, className(kind), modeName(write))
		}
	}
	if hs, err := c.p.Phases(); err == nil {
		for phase, h := range hs {
			name := trace.PhaseName(phase)
			if name == "" {
				name = "phase" + strconv.Itoa(int(phase))
			}
			ch <- constHistogram(c.phase, h, name)
		}
	}
	if hs, err := c.p.UringOps(); err == nil {
		for op, h := range hs {
			ch <- constHistogram(c.uring, h, OpName(op))
		}
	}
	if hs, err := c.p.KernelLocks(); err == nil {
		for flags, h := range hs {
			ch <- constHistogram(c.klock, h, ContentionFlags(flags))
		}
	}
	if hs, err := c.p.ReactorOffCPU(); err == nil {
		for reason, h := range hs {
			ch <- constHistogram(c.offcpu, h, OffCPUReason(reason))
		}
	}
	if s, err := c.p.Stats(); err == nil {
		for _, o := range []struct {
			name string
			n    uint64
		}{{JoinedSpanEvent, s.SpanEvents}, {JoinedChildSpan, s.ChildSpans}, {"no_span", s.EventsWithoutSpan}, {"lost", s.EventsLost}} {
			ch <- prometheus.MustNewConstMetric(c.events, prometheus.CounterValue, float64(o.n), o.name)
		}
	}
}

// constHistogram converts a BPF log2 histogram to Prometheus buckets on
// trace.DurationBounds: the bucket of boundary 2^j counts BPF buckets
// k < j.
func constHistogram(d *prometheus.Desc, h Hist, labels ...string) prometheus.Metric {
	buckets := make(map[float64]uint64, trace.DurationBucketMaxLog2-trace.DurationBucketMinLog2+1)
	var cum uint64
	k := 0
	for j := trace.DurationBucketMinLog2; j <= trace.DurationBucketMaxLog2; j++ {
		for ; k < j; k++ {
			cum += h.Buckets[k]
		}
		buckets[float64(uint64(1)<<j)/1e9] = cum
	}
	return prometheus.MustNewConstHistogram(d, h.Count(), float64(h.Sum)/1e9, buckets, labels...)
}

// opNames are io_uring's opcodes (include/uapi/linux/io_uring.h).
var opNames = [...]string{
	"nop", "readv", "writev", "fsync", "read_fixed", "write_fixed", "poll_add", "poll_remove",
	"sync_file_range", "sendmsg", "recvmsg", "timeout", "timeout_remove", "accept", "async_cancel",
	"link_timeout", "connect", "fallocate", "openat", "close", "files_update", "statx", "read",
	"write", "fadvise", "madvise", "send", "recv", "openat2", "epoll_ctl", "splice",
	"provide_buffers", "remove_buffers", "tee", "shutdown", "renameat", "unlinkat", "mkdirat",
	"symlinkat", "linkat", "msg_ring", "fsetxattr", "setxattr", "fgetxattr", "getxattr", "socket",
	"uring_cmd",
}

// OpName names an io_uring opcode ("read", "write", "fsync", ...), "op<n>"
// for one newer than this table.
func OpName(op uint32) string {
	if int(op) < len(opNames) {
		return opNames[op]
	}
	return "op" + strconv.Itoa(int(op))
}

// ContentionFlags names a lock:contention_begin flags word: its LCB_F_*
// bits joined with "|" ("spin", "write|mutex"), "none" for 0.
func ContentionFlags(f uint32) string {
	names := []string{"spin", "read", "write", "rt", "percpu", "mutex"}
	s := ""
	for i, n := range names {
		if f&(1<<i) != 0 {
			if s != "" {
				s += "|"
			}
			s += n
		}
	}
	if s == "" {
		return "none"
	}
	return s
}
