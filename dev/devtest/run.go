package devtest

import (
	"errors"
	"testing"

	"ustore/dev"
)

// deviceSize is the size of every device the suite opens: large enough for
// the 1 MiB transfers and for sixteen disjoint regions of the concurrent
// test, small enough that a file-backed device costs nothing to create.
const deviceSize = 16 << 20

// opener opens a fresh, zero-filled device of exactly size bytes for one
// sub-test. It may register its own t.Cleanup (temporary files are removed by
// t.TempDir already) but must not close the device: Run does.
type opener func(t *testing.T, size int64) dev.Device

// Run runs the conformance suite against the devices that open returns. Each
// sub-test calls open once.
func Run(t *testing.T, open func(t *testing.T, size int64) dev.Device) {
	t.Helper()
	tests := []struct {
		name string
		fn   func(t *testing.T, d dev.Device)
	}{
		{"Size", testSize},
		{"Read_NeverWritten", testReadNeverWritten},
		{"Read_EmptyBatch", testEmptyBatch},
		{"Write_Single", testWriteSingle},
		{"Write_Batch", testWriteBatch},
		{"Write_Large", testWriteLarge},
		{"Write_Adjacent", testWriteAdjacent},
		{"Write_PoolBuffers", testWritePoolBuffers},
		{"Write_Overwrite", testWriteOverwrite},
		{"IO_ErrClearedOnSuccess", testErrCleared},
		{"Read_Misaligned", testReadMisaligned},
		{"Write_Misaligned", testWriteMisaligned},
		{"Read_OutOfRange", testReadOutOfRange},
		{"Write_OutOfRange", testWriteOutOfRange},
		{"Write_RejectedBatch", testWriteRejectedBatch},
		{"Read_RejectedBatch", testReadRejectedBatch},
		{"Flush", testFlush},
		{"WriteDurable_Stages", testWriteDurable},
		{"Concurrent", testConcurrent},
		{"Close_ThenUse", testClose},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := openDevice(t, opener(open))
			tc.fn(t, d)
		})
	}
}

// openDevice opens a device for one sub-test and closes it when the sub-test
// ends (Invariant 1). A sub-test that closes the device itself (Close_ThenUse)
// leaves a second Close, which must then report dev.ErrClosed or nil.
func openDevice(t *testing.T, open opener) dev.Device {
	t.Helper()
	d := open(t, deviceSize)
	if d == nil {
		t.Fatal("open returned a nil device")
	}
	t.Cleanup(func() {
		if err := d.Close(); err != nil && !errors.Is(err, dev.ErrClosed) {
			t.Errorf("Close: %v", err)
		}
	})
	return d
}

// mustWrite writes a batch and fails the test on any error.
func mustWrite(t testing.TB, d dev.Device, ios ...dev.IO) {
	t.Helper()
	if err := d.Write(ios); err != nil {
		t.Fatalf("Write: %v", err)
	}
}

// mustRead reads a batch and fails the test on any error.
func mustRead(t testing.TB, d dev.Device, ios ...dev.IO) {
	t.Helper()
	if err := d.Read(ios); err != nil {
		t.Fatalf("Read: %v", err)
	}
}

// readBack reads [off, off+n) into a fresh buffer and checks it holds the
// pattern for tag.
func readBack(t testing.TB, d dev.Device, what string, off int64, n int, tag uint64) {
	t.Helper()
	b := garbage(n)
	mustRead(t, d, dev.IO{Off: off, Buf: b})
	check(t, what, b, off, tag)
}
