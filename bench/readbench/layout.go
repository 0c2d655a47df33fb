package readbench

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"

	"ustore/client"
)

// layoutChunk is how much of a file goes to the client's Writer at once.
const layoutChunk = 1 << 20

// LayOut makes the file at path size bytes long, every block stamped with
// its offset, and durable (the Writer's fsync and rename), unless it is
// there already with that size. It reports whether it wrote.
func LayOut(ctx context.Context, c *client.Client, path string, size int64, seed uint64) (bool, error) {
	if a, err := c.Resolve(ctx, path); err == nil && int64(a.Size) == size {
		return false, nil
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false, fmt.Errorf("readbench: %s: %w", path, err)
	}
	w, err := c.OpenWriter(ctx, path, true)
	if err != nil {
		return false, fmt.Errorf("readbench: %s: %w", path, err)
	}
	buf := make([]byte, layoutChunk)
	rng := rand.New(rand.NewPCG(seed, uint64(size)))
	for i := 0; i+8 <= len(buf); i += 8 {
		putU64(buf[i:], rng.Uint64())
	}
	for off := int64(0); off < size; off += layoutChunk {
		n := min(int64(layoutChunk), size-off)
		stamp(buf[:n], uint64(off), 0)
		if _, err := w.Write(buf[:n]); err != nil {
			_ = w.Abort()
			return false, fmt.Errorf("readbench: %s: write at %d: %w", path, off, err)
		}
	}
	if err := w.Close(); err != nil {
		return false, fmt.Errorf("readbench: %s: %w", path, err)
	}
	return true, nil
}

func putU64(b []byte, v uint64) {
	for i := range 8 {
		b[i] = byte(v >> (8 * i))
	}
}
