//go:build ignore

/* io_uring as the kernel sees it, for ustore's own rings: a submission by
 * a thread of target_tgid is remembered under (ring, user_data) with its
 * opcode and time; its completion closes it into a per-opcode log2
 * histogram of submit-to-complete latency. Completions of anything not
 * remembered (other processes' rings) are ignored with one hash lookup.
 * tp_btf: typed arguments, no tracefs needed. */

#include "ustore.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "hist.h"

char __license[] SEC("license") = "GPL";

/* The process whose rings are measured; set before load. */
volatile const __u32 target_tgid = 0;

struct uring_key {
	__u64 ring;
	__u64 user_data;
};

struct uring_start {
	__u64 ts;
	__u32 opcode;
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 8192);
	__type(key, struct uring_key);
	__type(value, struct uring_start);
} uring_starts SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, struct hist_key);
	__type(value, __u64);
} uring_hist SEC(".maps");

SEC("tp_btf/io_uring_submit_req")
int BPF_PROG(uring_submit, struct io_kiocb *req)
{
	if (bpf_get_current_pid_tgid() >> 32 != target_tgid)
		return 0;
	struct uring_key k = {
		.ring = (__u64)req->ctx,
		.user_data = req->cqe.user_data,
	};
	struct uring_start s = { .ts = bpf_ktime_get_ns(), .opcode = req->opcode };
	bpf_map_update_elem(&uring_starts, &k, &s, BPF_ANY);
	return 0;
}

SEC("tp_btf/io_uring_complete")
int BPF_PROG(uring_complete, struct io_ring_ctx *ring, void *req, struct io_uring_cqe *cqe)
{
	struct uring_key k = { .ring = (__u64)ring, .user_data = cqe->user_data };
	struct uring_start *s = bpf_map_lookup_elem(&uring_starts, &k);
	if (!s)
		return 0;
	hist_record(&uring_hist, s->opcode, bpf_ktime_get_ns() - s->ts);
	bpf_map_delete_elem(&uring_starts, &k);
	return 0;
}
