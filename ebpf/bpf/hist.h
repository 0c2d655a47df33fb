/* Log2 histograms in BPF hash maps, shared by every program. A histogram
 * is a set of entries keyed by (class, slot): slot k < HIST_SLOTS counts
 * values in [2^k, 2^(k+1)) (slot 0 also counts 0), as lock/class.go's
 * bucketIndex does, and slot HIST_SUM holds the values' sum. Entries are
 * created on first use and bumped with atomic adds: uprobe programs run
 * preemptibly, so a plain read-modify-write could lose a count. */
#ifndef USTORE_HIST_H
#define USTORE_HIST_H

#define HIST_SLOTS 64
#define HIST_SUM 64

struct hist_key {
	__u32 class;
	__u32 slot;
};

static __always_inline __u32 log2_u64(__u64 v)
{
	__u32 r = 0;
	if (v >> 32) { v >>= 32; r += 32; }
	if (v >> 16) { v >>= 16; r += 16; }
	if (v >> 8) { v >>= 8; r += 8; }
	if (v >> 4) { v >>= 4; r += 4; }
	if (v >> 2) { v >>= 2; r += 2; }
	if (v >> 1) { r += 1; }
	return r;
}

static __always_inline void hist_bump(void *map, __u32 class, __u32 slot, __u64 delta)
{
	struct hist_key k = { .class = class, .slot = slot };
	__u64 *v = bpf_map_lookup_elem(map, &k);
	if (!v) {
		__u64 zero = 0;
		/* Another CPU may create it first: then NOEXIST fails and the
		 * second lookup finds theirs. */
		bpf_map_update_elem(map, &k, &zero, BPF_NOEXIST);
		v = bpf_map_lookup_elem(map, &k);
		if (!v)
			return;
	}
	__sync_fetch_and_add(v, delta);
}

/* hist_record adds one value to class's histogram in map. */
static __always_inline void hist_record(void *map, __u32 class, __u64 value)
{
	hist_bump(map, class, log2_u64(value), 1);
	hist_bump(map, class, HIST_SUM, value);
}

#endif
