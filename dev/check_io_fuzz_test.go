package dev

import (
	"errors"
	"math/big"
	"testing"
)

// FuzzCheckIO compares CheckIO's verdict with exact big-integer arithmetic,
// so that no offset/length pair slips past the bounds check by overflow.
func FuzzCheckIO(f *testing.F) {
	f.Add(int64(0), 4096, int64(1<<20))
	f.Add(int64(1<<20-4096), 4096, int64(1<<20))
	f.Add(int64(1<<62), 8192, int64(1<<20))
	f.Add(int64(-4096), 4096, int64(1<<20))
	buf := AlignedBuffer(64 << 10)
	f.Fuzz(func(t *testing.T, off int64, n int, size int64) {
		if n < 0 || n > len(buf) || size < 0 {
			return
		}
		err := CheckIO([]IO{{Off: off, Buf: buf[:n]}}, size)
		aligned := off%SectorSize == 0 && n%SectorSize == 0 && n > 0
		end := new(big.Int).Add(big.NewInt(off), big.NewInt(int64(n)))
		inside := off >= 0 && end.Cmp(big.NewInt(size)) <= 0
		switch {
		case !aligned && !errors.Is(err, ErrAlignment):
			t.Fatalf("off %d len %d: %v, want ErrAlignment", off, n, err)
		case aligned && !inside && !errors.Is(err, ErrOutOfRange):
			t.Fatalf("off %d len %d size %d: %v, want ErrOutOfRange", off, n, size, err)
		case aligned && inside && err != nil:
			t.Fatalf("off %d len %d size %d: %v, want nil", off, n, size, err)
		}
	})
}
