//go:build ignore

/* Off-CPU time of ustore's io_uring reactor threads: sched_switch, for the
 * threads listed in reactors (ring/ registers each reactor's thread id;
 * the loader copies the list here), from the switch that takes the thread
 * off its CPU to the one that puts it back, into a log2 histogram by
 * reason: REASON_WAIT when it went to sleep (io_uring_enter waiting for
 * completions, a futex: the reactor had nothing to do, or waits on the
 * device), REASON_PREEMPTED when it was still runnable (preempted, or
 * yielded: it had work and waited for a CPU, the case that delays I/O).
 *
 * sched_switch fires on every context switch of the machine, so the
 * filter comes first and costs one inlined array lookup and a compare
 * per slot; no hash map on this path. */

#include "ustore.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "hist.h"

char __license[] SEC("license") = "GPL";

#define REACTORS_MAX 8
#define REASON_WAIT 0
#define REASON_PREEMPTED 1

/* The reactor threads; tid 0 marks a free slot (0 is also the idle task's
 * pid, which must never match). */
struct reactor_set {
	__u32 tids[REACTORS_MAX];
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct reactor_set);
} reactors SEC(".maps");

/* When slot i's thread went off its CPU, and why; tid guards against a
 * slot reused by another reactor in between. */
struct offcpu_start {
	__u64 ts;
	__u32 tid;
	__u32 reason;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, REACTORS_MAX);
	__type(key, __u32);
	__type(value, struct offcpu_start);
} offcpu_starts SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 256);
	__type(key, struct hist_key);
	__type(value, __u64);
} offcpu_hist SEC(".maps");

static __always_inline int slot_of(struct reactor_set *set, __u32 tid)
{
	if (tid == 0)
		return -1;
#pragma unroll
	for (int i = 0; i < REACTORS_MAX; i++)
		if (set->tids[i] == tid)
			return i;
	return -1;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(offcpu_switch, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	__u32 zero = 0;
	struct reactor_set *set = bpf_map_lookup_elem(&reactors, &zero);
	if (!set)
		return 0;
	__u32 prev_tid = prev->pid, next_tid = next->pid;
	int out = slot_of(set, prev_tid);
	int in = slot_of(set, next_tid);
	if (out < 0 && in < 0)
		return 0;
	__u64 now = bpf_ktime_get_ns();
	if (out >= 0) {
		__u32 k = out;
		struct offcpu_start *s = bpf_map_lookup_elem(&offcpu_starts, &k);
		if (s) {
			s->ts = now;
			s->tid = prev_tid;
			/* TASK_RUNNING is 0: switched out while runnable. */
			s->reason = (preempt || prev_state == 0) ? REASON_PREEMPTED : REASON_WAIT;
		}
	}
	if (in >= 0) {
		__u32 k = in;
		struct offcpu_start *s = bpf_map_lookup_elem(&offcpu_starts, &k);
		if (s && s->ts != 0 && s->tid == next_tid) {
			hist_record(&offcpu_hist, s->reason, now - s->ts);
			s->ts = 0;
		}
	}
	return 0;
}
