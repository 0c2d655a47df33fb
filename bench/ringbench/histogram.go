package ringbench

import (
	"math/bits"
	"time"
)

// histogram is a log-linear latency histogram: each power of two of
// nanoseconds is split into subBuckets linear buckets, so a percentile is off
// by at most 1/subBuckets (3%) of its value, in fixed memory.
type histogram struct {
	counts [64 * subBuckets]uint64
	n      uint64
	sum    time.Duration
}

const subBucketBits = 5
const subBuckets = 1 << subBucketBits

func bucketOf(ns uint64) int {
	if ns < subBuckets {
		return int(ns)
	}
	exp := bits.Len64(ns) - 1 - subBucketBits // >= 0
	sub := int(ns>>uint(exp)) & (subBuckets - 1)
	return (exp+1)*subBuckets + sub
}

// lowerBound is the smallest value of bucket b.
func lowerBound(b int) uint64 {
	if b < subBuckets {
		return uint64(b)
	}
	exp := b/subBuckets - 1
	sub := uint64(b % subBuckets)
	return (subBuckets + sub) << uint(exp)
}

func (h *histogram) record(d time.Duration) {
	if d < 0 {
		d = 0
	}
	h.counts[bucketOf(uint64(d))]++
	h.n++
	h.sum += d
}

func (h *histogram) merge(o *histogram) {
	for i := range h.counts {
		h.counts[i] += o.counts[i]
	}
	h.n += o.n
	h.sum += o.sum
}

// percentile returns the latency below which a fraction p of samples fall,
// as the midpoint of its bucket.
func (h *histogram) percentile(p float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	rank := uint64(p * float64(h.n))
	if rank >= h.n {
		rank = h.n - 1
	}
	var seen uint64
	for b, c := range h.counts {
		seen += c
		if seen > rank {
			lo, hi := lowerBound(b), lowerBound(b+1)
			return time.Duration((lo + hi) / 2)
		}
	}
	return 0
}

func (h *histogram) mean() time.Duration {
	if h.n == 0 {
		return 0
	}
	return h.sum / time.Duration(h.n)
}
