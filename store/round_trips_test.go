package store

import (
	"context"
	"testing"
	"time"

	"ustore/dev/memdev"
)

// TestStats_DeviceRoundTrips_Fsync: an fsync of four scattered writes to a
// committed file waits for one data write and for one log sync, and the
// counters say how many device round trips each was: the log sync's are
// two per flush the device saw during it (each flush ends a batch of
// writes), two in all — its nodes and chain record, a flush (format 2
// wrote a superblock after a first flush: four).
func TestStats_DeviceRoundTrips_Fsync(t *testing.T) {
	d := newTestDevice(t, 64<<20)
	s := openTest(t, d, Options{CommitInterval: 5 * time.Minute})
	defer closeCheck(t, s)
	ctx := context.Background()
	a, err := s.Create(RootIno, "f", 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Write(a.Ino, 0, make([]byte, 1<<20)); err != nil {
		t.Fatal(err)
	}
	if err := s.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	block := make([]byte, blockSize)
	for _, off := range []uint64{3, 70, 140, 200} {
		block[0] = byte(off)
		if _, err := s.Write(a.Ino, off*blockSize, block); err != nil {
			t.Fatal(err)
		}
	}
	before := s.Stats()
	seq := d.Seq()
	if err := s.Fsync(ctx, a.Ino, false); err != nil {
		t.Fatal(err)
	}
	after := s.Stats()
	flushes := 0
	for _, op := range d.Ops() {
		if op.Seq > seq && op.Kind == memdev.OpFlush {
			flushes++
		}
	}
	if got := after.FsyncLogged - before.FsyncLogged; got != 1 {
		t.Fatalf("%d fsyncs logged, want 1 (fallbacks %v)", got, after.FsyncFallbacks)
	}
	if got := after.Log.Syncs - before.Log.Syncs; got != 1 {
		t.Fatalf("%d log syncs, want 1", got)
	}
	data := after.DeviceRoundTrips.FsyncData - before.DeviceRoundTrips.FsyncData
	sync := after.DeviceRoundTrips.LogSync - before.DeviceRoundTrips.LogSync
	if data != 1 || sync != uint64(2*flushes) || sync != logSyncRoundTrips {
		t.Fatalf("round trips: data %d, log sync %d (%d flushes seen); want 1, %d", data, sync, flushes, logSyncRoundTrips)
	}
}

// logSyncRoundTrips is what one log sync costs on a device without FUA.
const logSyncRoundTrips = 2
