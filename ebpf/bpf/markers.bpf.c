//go:build ignore

/* Uprobes on ustore's marker functions (trace/markers_amd64.s): one
 * program for all four, attached once per marker body with a cookie that
 * says which marker it is. The markers are ABI0 assembly functions whose
 * first instruction is a 5-byte NOP (Linux turns the probe into a cheap
 * trampoline call), so their arguments sit on the stack above the return
 * address: at sp+8 when the probe fires.
 *
 * Lock waits are keyed by (lock id, token): a goroutine may block on one
 * thread and wake on another, so never by thread id. Phases are keyed by
 * (id, phase): commits are serialised, and so are the log syncs of one
 * generation.
 *
 * A wait's end does not come at the moment the lock was got: package lock
 * reports ends after the lock is released, in batches (LockWaitEnds), so
 * that no probe hit lengthens a critical section. Each end carries the
 * time the lock was got, a CLOCK_MONOTONIC reading like
 * bpf_ktime_get_ns, and the wait is that minus the begin time. */

#include "ustore.h"
#include <bpf/bpf_helpers.h>
#include "hist.h"

char __license[] SEC("license") = "GPL";

/* Cookies given at attach time, one per marker. */
#define MARK_LOCK_BEGIN 1
#define MARK_LOCK_ENDS 2
#define MARK_PHASE_BEGIN 3
#define MARK_PHASE_END 4

/* Indexes of the stats array. */
#define STAT_EVENTS_LOST 0   /* ring buffer full: a long wait not reported */
#define STAT_WAITS_UNTRACKED 1 /* wait_starts full: a wait not counted */
#define STAT_LOCK_END_ORPHAN 2 /* end without begin (attached mid-wait) */
#define STAT_PHASE_END_ORPHAN 3
#define STAT_ENDS_TRUNCATED 4  /* ends past MAX_ENDS_PER_HIT in one call: not counted */
#define STAT_COUNT 5

/* The most ends one LockWaitEnds call carries (trace.MaxWaitEndsPerMarker). */
#define MAX_ENDS_PER_HIT 256

/* Waits at least this long go to the ring buffer; set before load. */
volatile const __u64 wait_threshold_ns = 1000000;

struct wait_key {
	__u64 id;
	__u64 token;
};

struct wait_start {
	__u64 ts;
	__u64 span;
	__u32 kind;
	__u32 tid;
};

/* One record of the ring buffer: a lock wait over the threshold. */
struct wait_event {
	__u64 id;
	__u64 token;
	__u64 span;
	__u64 start_ns; /* CLOCK_MONOTONIC */
	__u64 wait_ns;
	__u32 kind;
	__u32 tid; /* the thread that began the wait */
};

/* One end of a LockWaitEnds batch: trace.WaitEnd. */
struct wait_end {
	__u64 id;
	__u64 token;
	__u64 end_ns; /* CLOCK_MONOTONIC: when the lock was got */
};

struct phase_key {
	__u64 id;
	__u32 phase;
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 8192);
	__type(key, struct wait_key);
	__type(value, struct wait_start);
} wait_starts SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 8192);
	__type(key, struct hist_key);
	__type(value, __u64);
} lock_hist SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 256);
	__type(key, struct phase_key);
	__type(value, __u64);
} phase_starts SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, struct hist_key);
	__type(value, __u64);
} phase_hist SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 256 * 1024);
} events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, STAT_COUNT);
	__type(key, __u32);
	__type(value, __u64);
} stats SEC(".maps");

/* Keep the type in the object's BTF for bpf2go -type. */
const struct wait_event *unused_wait_event __attribute__((unused));

static __always_inline void stat_inc(__u32 i)
{
	__u64 *v = bpf_map_lookup_elem(&stats, &i);
	if (v)
		__sync_fetch_and_add(v, 1);
}

static __always_inline int lock_begin(struct pt_regs *ctx)
{
	/* LockWaitBegin(id, token uint64, kind uint32, span uint64) */
	struct { __u64 id, token; __u32 kind, pad; __u64 span; } a;
	if (bpf_probe_read_user(&a, sizeof(a), (void *)(ctx->sp + 8)))
		return 0;
	struct wait_key k = { .id = a.id, .token = a.token };
	struct wait_start s = {
		.ts = bpf_ktime_get_ns(),
		.span = a.span,
		.kind = a.kind,
		.tid = (__u32)bpf_get_current_pid_tgid(),
	};
	if (bpf_map_update_elem(&wait_starts, &k, &s, BPF_ANY))
		stat_inc(STAT_WAITS_UNTRACKED);
	return 0;
}

/* lock_end_one is bpf_loop's body: the i-th end of the batch at ctx. */
static long lock_end_one(__u64 i, void *ctx)
{
	__u64 base = *(__u64 *)ctx;
	struct wait_end e;
	if (bpf_probe_read_user(&e, sizeof(e), (void *)(base + i * sizeof(e))))
		return 1; /* unreadable: the rest would be too */
	struct wait_key k = { .id = e.id, .token = e.token };
	struct wait_start *s = bpf_map_lookup_elem(&wait_starts, &k);
	if (!s) {
		stat_inc(STAT_LOCK_END_ORPHAN);
		return 0;
	}
	/* The begin time was read in BPF just before the Go side's t0, so
	 * end_ns is later; clamp anyway rather than wrap. */
	__u64 wait = e.end_ns > s->ts ? e.end_ns - s->ts : 0;
	hist_record(&lock_hist, s->kind, wait);
	if (wait >= wait_threshold_ns) {
		struct wait_event *ev = bpf_ringbuf_reserve(&events, sizeof(*ev), 0);
		if (ev) {
			ev->id = k.id;
			ev->token = k.token;
			ev->span = s->span;
			ev->start_ns = s->ts;
			ev->wait_ns = wait;
			ev->kind = s->kind;
			ev->tid = s->tid;
			bpf_ringbuf_submit(ev, 0);
		} else {
			stat_inc(STAT_EVENTS_LOST);
		}
	}
	bpf_map_delete_elem(&wait_starts, &k);
	return 0;
}

static __always_inline int lock_ends(struct pt_regs *ctx)
{
	/* LockWaitEnds(ends *WaitEnd, n int) */
	struct { __u64 ends, n; } a;
	if (bpf_probe_read_user(&a, sizeof(a), (void *)(ctx->sp + 8)))
		return 0;
	__u64 n = a.n;
	if (n > MAX_ENDS_PER_HIT) {
		stat_inc(STAT_ENDS_TRUNCATED);
		n = MAX_ENDS_PER_HIT;
	}
	bpf_loop(n, lock_end_one, &a.ends, 0);
	return 0;
}

static __always_inline int phase_begin(struct pt_regs *ctx)
{
	/* PhaseBegin(id uint64, phase uint32, span uint64) */
	struct { __u64 id; __u32 phase, pad; __u64 span; } a;
	if (bpf_probe_read_user(&a, sizeof(a), (void *)(ctx->sp + 8)))
		return 0;
	struct phase_key k = { .id = a.id, .phase = a.phase };
	__u64 ts = bpf_ktime_get_ns();
	bpf_map_update_elem(&phase_starts, &k, &ts, BPF_ANY);
	return 0;
}

static __always_inline int phase_end(struct pt_regs *ctx)
{
	/* PhaseEnd(id uint64, phase uint32): 12 bytes of arguments. */
	struct { __u64 id; __u32 phase; } __attribute__((packed)) a;
	if (bpf_probe_read_user(&a, sizeof(a), (void *)(ctx->sp + 8)))
		return 0;
	struct phase_key k = { .id = a.id, .phase = a.phase };
	__u64 *ts = bpf_map_lookup_elem(&phase_starts, &k);
	if (!ts) {
		stat_inc(STAT_PHASE_END_ORPHAN);
		return 0;
	}
	hist_record(&phase_hist, a.phase, bpf_ktime_get_ns() - *ts);
	bpf_map_delete_elem(&phase_starts, &k);
	return 0;
}

SEC("uprobe.multi")
int ustore_marker(struct pt_regs *ctx)
{
	switch (bpf_get_attach_cookie(ctx)) {
	case MARK_LOCK_BEGIN:
		return lock_begin(ctx);
	case MARK_LOCK_ENDS:
		return lock_ends(ctx);
	case MARK_PHASE_BEGIN:
		return phase_begin(ctx);
	case MARK_PHASE_END:
		return phase_end(ctx);
	}
	return 0;
}
