//go:build ignore

/* Kernel lock contention that ustore's threads run into (io_uring, the
 * block layer, the page cache, its sockets): lock:contention_begin/end,
 * filtered to target_tgid, keyed by thread id (a kernel wait never changes
 * thread), into a log2 histogram per contention flags word (LCB_F_SPIN 1,
 * READ 2, WRITE 4, RT 8, PERCPU 16, MUTEX 32). Go's own locks never show
 * here: a sync.Mutex parks in the Go scheduler, not in the kernel. */

#include "ustore.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "hist.h"

char __license[] SEC("license") = "GPL";

volatile const __u32 target_tgid = 0;

struct klock_start {
	__u64 ts;
	__u32 flags;
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct klock_start);
} klock_starts SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, struct hist_key);
	__type(value, __u64);
} klock_hist SEC(".maps");

SEC("tp_btf/contention_begin")
int BPF_PROG(klock_begin, void *lock, unsigned int flags)
{
	__u64 id = bpf_get_current_pid_tgid();
	if (id >> 32 != target_tgid)
		return 0;
	__u32 tid = (__u32)id;
	struct klock_start s = { .ts = bpf_ktime_get_ns(), .flags = flags & 0x3f };
	bpf_map_update_elem(&klock_starts, &tid, &s, BPF_ANY);
	return 0;
}

SEC("tp_btf/contention_end")
int BPF_PROG(klock_end, void *lock, int ret)
{
	__u64 id = bpf_get_current_pid_tgid();
	if (id >> 32 != target_tgid)
		return 0;
	__u32 tid = (__u32)id;
	struct klock_start *s = bpf_map_lookup_elem(&klock_starts, &tid);
	if (!s)
		return 0;
	hist_record(&klock_hist, s->flags, bpf_ktime_get_ns() - s->ts);
	bpf_map_delete_elem(&klock_starts, &tid);
	return 0;
}
