package ringbench

import (
	"fmt"
	"math/rand/v2"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"ustore/dev"
	"ustore/ring"
)

// Run lays out the file if needed and runs every (RW, QD) configuration.
func Run(cfg Config) ([]Result, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	cfg.Size = cfg.Size / int64(cfg.BS) * int64(cfg.BS)
	if err := layOut(cfg.File, cfg.Size); err != nil {
		return nil, err
	}
	flags := os.O_RDWR
	if cfg.Direct {
		flags |= syscall.O_DIRECT
	}
	f, err := os.OpenFile(cfg.File, flags, 0)
	if err != nil {
		return nil, fmt.Errorf("ringbench: %w", err)
	}
	defer f.Close()
	var results []Result
	for _, rw := range cfg.RWs {
		for _, qd := range cfg.QDs {
			res, err := runOne(&cfg, int(f.Fd()), rw, qd)
			if err != nil {
				return results, err
			}
			results = append(results, res)
		}
	}
	return results, nil
}

// layOut writes the whole file once when it is missing, short or sparse, so
// reads hit the device and not holes (fio does the same).
func layOut(path string, size int64) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("ringbench: %w", err)
	}
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT == unix.S_IFBLK || (st.Size >= size && st.Blocks*512 >= size) {
		return nil
	}
	buf := make([]byte, 1<<20)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range buf {
		buf[i] = byte(rng.Uint32())
	}
	for off := int64(0); off < size; off += int64(len(buf)) {
		n := min(int64(len(buf)), size-off)
		if _, err := f.WriteAt(buf[:n], off); err != nil {
			return fmt.Errorf("ringbench: laying out %s: %w", path, err)
		}
	}
	return f.Sync()
}

// workload hands out offsets: random or sequential over the file.
type workload struct {
	rng    *rand.Rand
	blocks uint64
	bs     int64
	seq    bool
	next   uint64
}

func newWorkload(cfg *Config, rw string, seed uint64) *workload {
	return &workload{
		rng:    rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15)),
		blocks: uint64(cfg.Size / int64(cfg.BS)),
		bs:     int64(cfg.BS),
		seq:    rw == "read" || rw == "write",
		next:   seed * 7919,
	}
}

func (w *workload) offset() int64 {
	if w.seq {
		b := w.next % w.blocks
		w.next++
		return int64(b) * w.bs
	}
	return int64(w.rng.Uint64N(w.blocks)) * w.bs
}

func isRead(rw string) bool { return rw == "randread" || rw == "read" }

func runOne(cfg *Config, fd int, rw string, qd int) (Result, error) {
	res := Result{Engine: cfg.Engine, RW: rw, QD: qd, BS: cfg.BS}
	var (
		h       histogram
		ops     uint64
		elapsed time.Duration
		err     error
		st      ring.Stats
	)
	switch {
	case cfg.Engine == "pread":
		h, ops, elapsed, err = runPread(cfg, fd, rw, qd)
	default:
		var r *ring.Ring
		rcfg := ring.Config{NoDirect: cfg.NoDirect || cfg.Engine == "ring-async"}
		if cfg.Fixed {
			rcfg.FixedBytes = qd * cfg.BS
		}
		// The ring admits CQ-1 ops (CQ = 2 × SQ): an SQ of at least qd.
		rcfg.Entries = 256
		for int(rcfg.Entries) < qd {
			rcfg.Entries *= 2
		}
		rcfg.Mode = cfg.RingMode
		rcfg.SubmitBatchMax = cfg.SubmitBatch
		r, err = ring.New(rcfg)
		if err != nil {
			return res, err
		}
		switch {
		case cfg.Engine == "ring":
			h, ops, elapsed, err = runRingLoop(cfg, r, fd, rw, qd)
		case cfg.Engine == "ring-sync":
			h, ops, elapsed, err = runRingSync(cfg, r, fd, rw, qd)
		default:
			h, ops, elapsed, err = runRingAsync(cfg, r, fd, rw, qd)
		}
		st = r.Stats()
		if cerr := r.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		return res, fmt.Errorf("ringbench: %s qd %d (%s): %w", rw, qd, cfg.Engine, err)
	}
	secs := elapsed.Seconds()
	res.Ops, res.Seconds = ops, secs
	res.IOPS = float64(ops) / secs
	res.MBps = res.IOPS * float64(cfg.BS) / 1e6
	res.MeanUS = float64(h.mean()) / 1e3
	res.P50US = float64(h.percentile(0.50)) / 1e3
	res.P99US = float64(h.percentile(0.99)) / 1e3
	res.P999US = float64(h.percentile(0.999)) / 1e3
	if st.Enters > 0 {
		res.OpsPerEnter = float64(st.Completed) / float64(st.Enters)
	}
	res.DirectOps = st.Direct
	res.KernelWakes, res.Parks = st.KernelWakes, st.Parks
	return res, nil
}

// buffers returns qd aligned buffers of bs bytes, from the ring's registered
// region when it has one, filled with random bytes for writes.
func buffers(r *ring.Ring, qd, bs int) [][]byte {
	bufs := make([][]byte, qd)
	var region []byte
	if r != nil {
		region = r.FixedRegion()
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range bufs {
		if len(region) >= (i+1)*bs {
			bufs[i] = region[i*bs : (i+1)*bs]
		} else {
			bufs[i] = dev.AlignedBuffer(bs)
		}
		for j := range bufs[i] {
			bufs[i][j] = byte(rng.Uint32())
		}
	}
	return bufs
}

// progressTicker calls cfg.Progress about once a second.
type progressTicker struct {
	cfg   *Config
	rw    string
	qd    int
	start time.Time
	next  time.Time
}

func newProgress(cfg *Config, rw string, qd int, start time.Time) progressTicker {
	return progressTicker{cfg: cfg, rw: rw, qd: qd, start: start, next: start.Add(time.Second)}
}

func (p *progressTicker) tick(now time.Time, ops uint64) {
	if p.cfg.Progress == nil || now.Before(p.next) {
		return
	}
	p.next = now.Add(time.Second)
	p.cfg.Progress(Progress{RW: p.rw, QD: p.qd, Elapsed: now.Sub(p.start), Duration: p.cfg.Duration, Ops: ops})
}
