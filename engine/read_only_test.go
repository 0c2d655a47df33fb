package engine

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"ustore/dev"
	"ustore/dev/memdev"
)

// deviceBytes returns a copy of every byte of d.
func deviceBytes(t *testing.T, d dev.Device) []byte {
	t.Helper()
	buf := dev.AlignedBuffer(int(d.Size()))
	if err := d.Read([]dev.IO{{Off: 0, Buf: buf}}); err != nil {
		t.Fatal(err)
	}
	return buf
}

// TestEngine_Mount_ReadOnly: with the free space tree's root damaged a
// read-write mount fails; a read-only one mounts, reads every tree, and
// refuses every transaction with ErrMountedReadOnly — so no commit, not
// even Close's, writes a byte.
func TestEngine_Mount_ReadOnly(t *testing.T) {
	e, d := newTestEngine(t, 16<<20, 4096)
	tr, _ := e.Start()
	tree, _ := e.CreateTree(tr, testTree)
	for i := uint64(0); i < 500; i++ {
		if err := tree.InsertItem(tr, testKey(i), testValue(i, 60)); err != nil {
			t.Fatal(err)
		}
	}
	tr.End()
	commit(t, e)
	fst := e.Tree(FreeSpaceTreeID).root.bytenr
	closeEngine(t, e)
	buf := dev.AlignedBuffer(4096)
	if err := d.Read([]dev.IO{{Off: int64(fst), Buf: buf}}); err != nil {
		t.Fatal(err)
	}
	buf[100] ^= 0x01
	if err := d.WriteDurable([]dev.IO{{Off: int64(fst), Buf: buf}}); err != nil {
		t.Fatal(err)
	}

	if e, err := Mount(d, Options{Logger: quiet()}); !errors.Is(err, ErrCorruption) {
		if err == nil {
			e.Close(context.Background())
		}
		t.Fatalf("read-write mount with a damaged free space tree: %v", err)
	}
	before := deviceBytes(t, d)
	ops := len(d.Ops())
	e, err := Mount(d, Options{Logger: quiet(), ReadOnly: true})
	if err != nil {
		t.Fatalf("read-only mount: %v", err)
	}
	for i := uint64(0); i < 500; i++ {
		if v, err := e.Tree(testTree).Lookup(testKey(i)); err != nil || !bytes.Equal(v, testValue(i, 60)) {
			t.Fatalf("key %d: %v", i, err)
		}
	}
	if _, err := e.Start(); !errors.Is(err, ErrMountedReadOnly) {
		t.Fatalf("Start: %v", err)
	}
	if _, err := e.StartReserved(1 << 20); !errors.Is(err, ErrMountedReadOnly) {
		t.Fatalf("StartReserved: %v", err)
	}
	if rep := Check(e); rep.Err() == nil || !strings.Contains(rep.Err().Error(), "no free space tree") {
		t.Fatalf("fsck of a read-only mount without a free space tree: %v", rep.Err())
	}
	if sp := e.Space(); sp.Total == 0 || sp.Free == 0 || sp.Available != 0 {
		t.Fatalf("space: %+v", sp)
	}
	if _, err := e.Commit(context.Background()); err != nil {
		t.Fatalf("commit with nothing running: %v", err)
	}
	if err := e.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, op := range d.Ops()[ops:] {
		if op.Kind != memdev.OpRead {
			t.Fatalf("the read-only mount issued %v", op)
		}
	}
	if !bytes.Equal(deviceBytes(t, d), before) {
		t.Fatal("the read-only mount changed the device")
	}
}
