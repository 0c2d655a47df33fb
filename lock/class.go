package lock

import (
	"math/bits"
	"sync/atomic"
	"time"
)

// BucketCount is the number of wait histogram buckets: one per power of two
// of a uint64 nanosecond count, so every possible wait has a bucket.
const BucketCount = 64

// Class accounts for the contended waits of a group of locks, e.g. the node
// locks of one tree level or the log mutex. Create it with NewClass and share
// it between the locks of the group; its methods are safe for concurrent use.
type Class struct {
	name string
	kind uint32

	// observe, when set, also sees every contended wait: the owner's
	// metrics (a histogram labelled by tree and level).
	observe func(time.Duration)

	contended atomic.Uint64              // slow-path acquisitions
	waitNanos atomic.Uint64              // their waits, summed
	buckets   [BucketCount]atomic.Uint64 // their waits, log2 histogram
}

// ClassStats is a copy of a Class's counters.
type ClassStats struct {
	Name string
	Kind uint32
	// Contended counts acquisitions that found the lock taken (slow paths).
	Contended uint64
	// WaitNanos is the sum of those acquisitions' waits.
	WaitNanos uint64
	// Buckets[i] counts waits in [2^i, 2^(i+1)) ns; Buckets[0] also counts
	// waits of 0 ns.
	Buckets [BucketCount]uint64
}

// NewClass returns a Class. name labels its metrics; kind is handed to
// trace.LockWaitBegin on every contended acquisition, so that BPF groups
// waits the same way (the encoding is the caller's).
// The write bit of kind (KindWrite) is dropped: the slow path sets it.
func NewClass(name string, kind uint32) *Class {
	kind &^= KindWrite
	classNames.Store(kind, name)
	return &Class{name: name, kind: kind}
}

// Observe makes fn see every contended wait of the class from now on, after
// it is recorded. Call it before the class's locks are used.
func (c *Class) Observe(fn func(wait time.Duration)) { c.observe = fn }

// Name returns the name given to NewClass.
func (c *Class) Name() string { return c.name }

// Kind returns the kind given to NewClass.
func (c *Class) Kind() uint32 { return c.kind }

// Snapshot copies the counters. Contended is loaded first and buckets last,
// so while waits are being recorded the buckets' total may run ahead of
// Contended but never behind it (Invariant 3).
func (c *Class) Snapshot() ClassStats {
	s := ClassStats{Name: c.name, Kind: c.kind}
	s.Contended = c.contended.Load()
	s.WaitNanos = c.waitNanos.Load()
	for i := range c.buckets {
		s.Buckets[i] = c.buckets[i].Load()
	}
	return s
}

// kindOf returns c's kind, 0 for a nil class.
func kindOf(c *Class) uint32 {
	if c == nil {
		return 0
	}
	return c.kind
}

// record accounts one contended acquisition that waited wait. The bucket is
// bumped before Contended; see Snapshot.
func (c *Class) record(wait time.Duration) {
	if c == nil {
		return
	}
	ns := uint64(max(wait, 0)) // the monotonic clock never goes back; be sure
	c.buckets[bucketIndex(ns)].Add(1)
	c.waitNanos.Add(ns)
	c.contended.Add(1)
	if c.observe != nil {
		c.observe(wait)
	}
}

// bucketIndex returns the histogram bucket of a wait of ns nanoseconds:
// floor(log2(ns)), with 0 for 0. BPF computes the same index, so Go-side and
// BPF-side histograms line up bucket for bucket.
func bucketIndex(ns uint64) int {
	if ns == 0 {
		return 0
	}
	return bits.Len64(ns) - 1
}
