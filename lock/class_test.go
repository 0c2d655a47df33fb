package lock

import (
	"math"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestBucketIndex_Bounds(t *testing.T) {
	for _, tc := range []struct {
		ns   uint64
		want int
	}{
		{0, 0}, {1, 0}, {2, 1}, {3, 1}, {4, 2}, {7, 2}, {8, 3},
		{1023, 9}, {1024, 10}, {1025, 10},
		{uint64(time.Millisecond), 19}, // 2^19 = 524288 ≤ 1e6 < 2^20
		{1 << 62, 62}, {1<<63 - 1, 62}, {1 << 63, 63}, {math.MaxUint64, 63},
	} {
		if got := bucketIndex(tc.ns); got != tc.want {
			t.Errorf("bucketIndex(%d) = %d, want %d", tc.ns, got, tc.want)
		}
	}
}

func TestClass_Record_ExactBuckets(t *testing.T) {
	c := NewClass("tree5.level0", 0x0500)
	for _, d := range []time.Duration{0, 1, 2, 3, 1024, time.Millisecond, -5} {
		c.record(d)
	}
	s := c.Snapshot()
	if s.Name != "tree5.level0" || s.Kind != 0x0500 || c.Name() != s.Name || c.Kind() != s.Kind {
		t.Fatalf("snapshot names %q kind %#x; class %q %#x", s.Name, s.Kind, c.Name(), c.Kind())
	}
	var want [BucketCount]uint64
	want[0] = 3 // 0, 1 and the negative duration, clamped to 0
	want[1] = 2 // 2, 3
	want[10] = 1
	want[19] = 1
	if s.Buckets != want {
		t.Fatalf("buckets %v, want %v", s.Buckets, want)
	}
	if wantNs := uint64(0 + 1 + 2 + 3 + 1024 + time.Millisecond); s.Contended != 7 || s.WaitNanos != wantNs {
		t.Fatalf("Contended %d WaitNanos %d, want 7 and %d", s.Contended, s.WaitNanos, wantNs)
	}
}

func TestClass_Record_NilClass(t *testing.T) {
	var c *Class
	c.record(time.Second) // must not panic: a nil class records nothing
	if kindOf(c) != 0 {
		t.Fatalf("kind of a nil class is %d, want 0", kindOf(c))
	}
}

// TestClass_Snapshot_NeverBehind checks the concurrent half of Invariant 3:
// while waits are being recorded, a snapshot's histogram total is never below
// its Contended; once recording stops they are equal.
func TestClass_Snapshot_NeverBehind(t *testing.T) {
	c := NewClass("c", 1)
	const writers, each = 4, 2000
	var wg sync.WaitGroup
	var done atomic.Bool
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				c.record(time.Duration(w*each + i))
			}
		})
	}
	go func() { wg.Wait(); done.Store(true) }()
	for snapshots := 0; !done.Load() || snapshots == 0; snapshots++ {
		if s := c.Snapshot(); s.total() < s.Contended {
			t.Fatalf("snapshot %d: histogram total %d behind Contended %d", snapshots, s.total(), s.Contended)
		}
	}
	wg.Wait()
	if s := c.Snapshot(); s.Contended != writers*each || s.total() != writers*each {
		t.Fatalf("after recording: Contended %d, histogram total %d, want %d", s.Contended, s.total(), writers*each)
	}
}

// TestKind_Pack_Fields: the kind layout BPF decodes (kind.go) keeps tree,
// level and type apart, a class never carries the write bit, and KindName
// finds a class by its kind with or without that bit.
func TestKind_Pack_Fields(t *testing.T) {
	k := NodeKind(^uint64(5), 3)
	if k&0xff != KindNode || k>>kindLevelShift&0xff != 3 || k>>kindTreeShift&kindTreeMask != 0x7ffa || k&KindWrite != 0 {
		t.Fatalf("NodeKind(log tree, 3) = %#x", k)
	}
	if r := RootKind(5); r&0xff != KindRoot || r>>kindTreeShift&kindTreeMask != 5 {
		t.Fatalf("RootKind(5) = %#x", r)
	}
	c := NewClass("kindtest.level3", k|KindWrite)
	if c.Kind() != k {
		t.Fatalf("class kind %#x, want %#x (write bit dropped)", c.Kind(), k)
	}
	if KindName(k) != "kindtest.level3" || KindName(k|KindWrite) != "kindtest.level3" {
		t.Fatalf("KindName(%#x) = %q", k, KindName(k))
	}
}
