package ebpf

import "time"

// BucketCount is the number of log2 buckets of a BPF histogram: one per
// power of two of a uint64 nanosecond count, as lock.BucketCount.
const BucketCount = 64

// Hist is one BPF log2 histogram, read out of its map: Buckets[k] counts
// values in [2^k, 2^(k+1)) ns (Buckets[0] also counts 0), Sum is their
// total in ns. It is the layout of lock.ClassStats, so the two compare
// bucket for bucket.
type Hist struct {
	Buckets [BucketCount]uint64
	Sum     uint64
}

// Count is the number of values in the histogram.
func (h Hist) Count() uint64 {
	var n uint64
	for _, b := range h.Buckets {
		n += b
	}
	return n
}

// Mean is the average value, 0 for an empty histogram.
func (h Hist) Mean() time.Duration {
	if n := h.Count(); n > 0 {
		return time.Duration(h.Sum / n)
	}
	return 0
}

// slots are the map's entries of one histogram: slot < BucketCount is a
// bucket, slot == BucketCount the sum (bpf/hist.h).
func (h *Hist) add(slot uint32, v uint64) {
	switch {
	case slot < BucketCount:
		h.Buckets[slot] += v
	case slot == BucketCount:
		h.Sum += v
	}
}

// Stats are the BPF side's own counters of what it could not do.
type Stats struct {
	EventsLost        uint64 // long waits the full ring buffer could not take
	WaitsUntracked    uint64 // waits not counted: the in-flight map was full
	LockEndOrphans    uint64 // wait ends without a begin (attached mid-wait)
	PhaseEndOrphans   uint64 // phase ends without a begin
	EndsTruncated     uint64 // LockWaitEnds calls with more ends than BPF takes at once
	Events            uint64 // WaitEvents read from the ring buffer
	SpanEvents        uint64 // of which added to their live span
	ChildSpans        uint64 // of which made a child span of their ended span
	EventsWithoutSpan uint64 // of which had no known span
}
