package readbench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"ustore/client"
)

// SeqResult is one sequential read of a whole file.
type SeqResult struct {
	Path    string  `json:"path"`
	Bytes   int64   `json:"bytes"`
	Seconds float64 `json:"seconds"`
	MBps    float64 `json:"mb_per_s"` // 10^6 bytes a second
}

// seqReadBuf is how much the reader takes from the Reader at once: one
// chunk of its pipeline.
const seqReadBuf = 1 << 20

// SeqRead reads the file at path front to back through the client's
// Reader, checking every block's stamp, and times it from the open to
// the last byte.
func SeqRead(ctx context.Context, c *client.Client, path string) (SeqResult, error) {
	start := time.Now()
	r, err := c.OpenReader(ctx, path)
	if err != nil {
		return SeqResult{}, fmt.Errorf("readbench: %s: %w", path, err)
	}
	defer r.Close()
	size := int64(r.Attr().Size)
	buf := make([]byte, seqReadBuf)
	var off int64
	for off < size {
		n, err := io.ReadFull(r, buf[:min(int64(len(buf)), size-off)])
		if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
			return SeqResult{}, fmt.Errorf("readbench: %s: read at %d: %w", path, off, err)
		}
		if err := checkBlock(buf[:n], uint64(off)); err != nil {
			return SeqResult{}, err
		}
		off += int64(n)
		if n == 0 || err != nil {
			break
		}
	}
	el := time.Since(start)
	if off != size {
		return SeqResult{}, fmt.Errorf("readbench: %s: read %d bytes of %d", path, off, size)
	}
	return SeqResult{Path: path, Bytes: off, Seconds: el.Seconds(), MBps: float64(off) / el.Seconds() / 1e6}, nil
}
