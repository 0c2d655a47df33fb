//go:build linux && amd64

package ebpf

import (
	"os"
	"path/filepath"
	"testing"

	"ustore/ring"
)

// The IORING_OP_* codes the test's operations use (a fixed buffer makes
// reads and writes READ_FIXED/WRITE_FIXED, apart from the ring's own
// eventfd READs).
const (
	opNop        = 0
	opFsync      = 3
	opReadFixed  = 4
	opWriteFixed = 5
)

// TestProbes_Uring_ExactCounts: n each of NOP, WRITE_FIXED, READ_FIXED and
// FSYNC through ring/ give exactly n completions per opcode in the BPF
// histograms, and nothing left half-tracked.
func TestProbes_Uring_ExactCounts(t *testing.T) {
	const n = 64
	p := attachAll(t, Config{})
	r, err := ring.New(ring.Config{Entries: 32, FixedBytes: 4096, NoDirect: true})
	if err != nil {
		t.Skipf("io_uring unavailable: %v", err)
	}
	defer r.Close()
	f, err := os.Create(filepath.Join(t.TempDir(), "data"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fd := int(f.Fd())
	buf := r.FixedRegion()[:4096]

	before, err := p.UringOps()
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		off := int64(i%8) * 4096
		for _, op := range []*ring.Op{
			{Kind: ring.OpNop},
			{Kind: ring.OpWrite, Fd: fd, Buf: buf, Off: off},
			{Kind: ring.OpRead, Fd: fd, Buf: buf, Off: off},
			{Kind: ring.OpFsync, Fd: fd},
		} {
			if err := r.Do(op); err != nil {
				t.Fatalf("op %d %v: %v", i, op.Kind, err)
			}
		}
	}
	after, err := p.UringOps()
	if err != nil {
		t.Fatal(err)
	}
	for _, op := range []uint32{opNop, opWriteFixed, opReadFixed, opFsync} {
		if got := after[op].Count() - before[op].Count(); got != n {
			t.Errorf("%s: %d completions counted, want %d", OpName(op), got, n)
		}
	}
}
