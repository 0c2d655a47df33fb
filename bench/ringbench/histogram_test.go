package ringbench

import (
	"testing"
	"time"
)

func TestHistogram_Percentile_WithinBucketError(t *testing.T) {
	var h histogram
	for i := 1; i <= 100000; i++ {
		h.record(time.Duration(i) * time.Microsecond / 10) // 0.1 µs .. 10 ms, uniform
	}
	for _, c := range []struct {
		p    float64
		want time.Duration
	}{{0.5, 5 * time.Millisecond}, {0.99, 9900 * time.Microsecond}, {0.999, 9990 * time.Microsecond}} {
		got := h.percentile(c.p)
		if diff := float64(got-c.want) / float64(c.want); diff > 0.04 || diff < -0.04 {
			t.Errorf("p%v = %v, want %v ± 4%%", c.p*100, got, c.want)
		}
	}
}

func TestHistogram_BucketOf_Monotonic(t *testing.T) {
	prev := 0
	for ns := uint64(0); ns < 1<<22; ns += 7 {
		b := bucketOf(ns)
		if b < prev {
			t.Fatalf("bucketOf(%d) = %d < %d", ns, b, prev)
		}
		if lo := lowerBound(b); lo > ns || lowerBound(b+1) <= ns {
			t.Fatalf("ns %d in bucket %d [%d, %d)", ns, b, lo, lowerBound(b+1))
		}
		prev = b
	}
}
