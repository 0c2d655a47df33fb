package client_test

import (
	"bytes"
	"context"
	"math/rand/v2"
	"testing"

	"ustore/client"
)

// TestWriteBehind_Served_MatchesModel: random writes of one file through
// a write-behind writer — overlapping, unaligned, some larger than one
// request — then an fsync: the file holds what writing them one at a time
// would have left, and the writer's reads see its own writes.
func TestWriteBehind_Served_MatchesModel(t *testing.T) {
	c, _ := serve(t)
	ctx := context.Background()
	a, err := c.Create(ctx, client.RootIno, "f", 0o644)
	if err != nil {
		t.Fatal(err)
	}
	const size = 256 << 10
	model := make([]byte, size)
	w := c.WriteBehind(a.Ino, 8)
	rng := rand.New(rand.NewPCG(1, 2))
	buf := make([]byte, 2<<20)
	end := 0
	for i := range 400 {
		n := 1 + rng.IntN(16<<10)
		if i%100 == 99 {
			n = 1<<20 + rng.IntN(64<<10) // over one request's limit
		}
		off := rng.IntN(size - min(n, size-1))
		n = min(n, size-off)
		for j := range n {
			buf[j] = byte(rng.Uint32())
		}
		if err := w.WriteAt(ctx, buf[:n], uint64(off)); err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
		copy(model[off:], buf[:n])
		end = max(end, off+n)
		if i%50 == 49 {
			got := make([]byte, end)
			if n, err := w.ReadAt(ctx, got, 0); err != nil || n != end || !bytes.Equal(got, model[:end]) {
				t.Fatalf("after write %d: read %d bytes (%v), want the %d the writes left", i, n, err, end)
			}
		}
	}
	if err := w.Fsync(ctx, false); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(ctx); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, end)
	if n, err := c.Read(ctx, a.Ino, 0, got); err != nil || n != end || !bytes.Equal(got, model[:end]) {
		t.Fatalf("read %d bytes (%v), want the %d the writes left", n, err, end)
	}
}
