package store

import (
	"bytes"
	"context"
	"testing"

	"ustore/dev/memdev"
)

// The rules of an fsync whose data goes out with its log sync
// (fsync_data.go); its crash cases are TestLogChain_Crash_DataLost's, and
// its round trips TestStats_DeviceRoundTrips_Fsync's.

// fdDataRange returns a test predicate: whether a device offset lies in
// the blocks of ino's extents over [start, end).
func fdDataRange(t *testing.T, s *Store, ino Ino, start, end uint64) func(off int64) bool {
	t.Helper()
	xs, err := s.extentsIn(ino, start, end)
	if err != nil {
		t.Fatal(err)
	}
	if len(xs) == 0 {
		t.Fatalf("inode %d has no extent in [%d, %d)", ino, start, end)
	}
	return func(off int64) bool {
		for _, x := range xs {
			if off >= int64(x.x.DiskBytenr) && off < int64(x.x.DiskEnd()) {
				return true
			}
		}
		return false
	}
}

// TestFsyncData_GroupCommit_OwnSync: an fsync that logs while another's
// log sync is being written joins the next sub-transaction, and its data
// goes out with that next sync, not before it and not with the sync in
// flight; it is not acknowledged before its own sync's batch (its data
// with it) is written and flushed.
func TestFsyncData_GroupCommit_OwnSync(t *testing.T) {
	ctx := context.Background()
	d := newTestDevice(t, 64<<20)
	s := openTest(t, d, quiet(Options{}))
	defer closeCheck(t, s)
	a := mustCreate(t, s, RootIno, "a", append(blockVersion(0, 1), blockVersion(1, 1)...))
	b := mustCreate(t, s, RootIno, "b", append(blockVersion(0, 1), blockVersion(1, 1)...))
	if err := s.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	for _, ino := range []Ino{a, b} {
		if _, err := s.Write(ino, 0, blockVersion(0, 2)); err != nil {
			t.Fatal(err)
		}
	}
	start := d.Seq()
	h := d.HoldNext(memdev.HoldWriteDurable)
	doneA, doneB := make(chan error, 1), make(chan error, 1)
	go func() { doneA <- s.Fsync(ctx, a, false) }()
	<-h.Held() // a's log sync, its batch not yet written
	h2 := d.HoldNext(memdev.HoldWriteDurable)
	go func() { doneB <- s.Fsync(ctx, b, false) }()
	h.Release()
	if err := <-doneA; err != nil {
		t.Fatal(err)
	}
	<-h2.Held() // b's own log sync
	held := d.Seq()
	// Checked while b's sync is held, reported once it is released (a
	// failed test must not leave b holding its transaction open).
	var early error
	returned := false
	select {
	case early = <-doneB:
		returned = true
	default:
	}
	inB := fdDataRange(t, s, b, 0, blockSize)
	var before []memdev.Op
	for _, op := range d.Ops() {
		if op.Seq > start && op.Kind == memdev.OpWrite && inB(op.Off) {
			before = append(before, op)
		}
	}
	h2.Release()
	if returned {
		t.Fatalf("b's fsync returned (%v) before its log sync wrote its data", early)
	}
	if err := <-doneB; err != nil {
		t.Fatal(err)
	}
	if len(before) > 0 {
		t.Fatalf("b's data written at %d (op %d) before its own log sync: want it in that sync's batch", before[0].Off, before[0].Seq)
	}
	written, flushed := false, false
	for _, op := range d.Ops() {
		switch {
		case op.Seq <= held:
		case op.Kind == memdev.OpWrite && inB(op.Off):
			written = true
		case op.Kind == memdev.OpFlush && written:
			flushed = true
		}
	}
	if !written || !flushed {
		t.Fatalf("b's sync: data written %v, flushed after %v", written, flushed)
	}
	if st := s.Stats(); st.FsyncLogged != 2 || st.Log.Syncs != 2 || st.DeviceRoundTrips.FsyncData != 0 {
		t.Fatalf("%d fsyncs logged in %d log syncs, %d data round trips of their own; want 2 in 2, 0",
			st.FsyncLogged, st.Log.Syncs, st.DeviceRoundTrips.FsyncData)
	}
	for _, ino := range []Ino{a, b} {
		buf := make([]byte, blockSize)
		if _, err := s.Read(ino, 0, buf); err != nil || !bytes.Equal(buf, blockVersion(0, 2)) {
			t.Fatalf("read %d after its fsync: %v, fresh %v", ino, err, bytes.Equal(buf, blockVersion(0, 2)))
		}
	}
}

// TestFsyncData_Read_SnapshotBeforeWrite: a read that found a block on
// neither a page nor in the cache, and is about to read the device, is
// overtaken by a write of the block and its fsync, which maps the block's
// new extent before its log sync writes the data. The read must not map
// that extent before the data is written (it would read stale bytes: EIO):
// the fsync holds the inode's extMu for writing meanwhile. The hook runs
// the write and the fsync in that window, deterministically.
func TestFsyncData_Read_SnapshotBeforeWrite(t *testing.T) {
	ctx := context.Background()
	d := newTestDevice(t, 64<<20)
	s := openTest(t, d, quiet(Options{}))
	old, fresh := blockVersion(0, 1), blockVersion(0, 2)
	ino := mustCreate(t, s, RootIno, "f", append(bytes.Clone(old), blockVersion(1, 1)...))
	s = remount(t, s, d, quiet(Options{})) // an empty page cache: the read goes to the device
	defer closeCheck(t, s)
	ran := false
	testHookBeforeDeviceRead = func(got Ino) {
		if ran || got != ino {
			return
		}
		ran = true
		if _, err := s.Write(ino, 0, fresh); err != nil {
			t.Error(err)
			return
		}
		h := d.HoldNext(memdev.HoldWriteDurable)
		done := make(chan error, 1)
		go func() { done <- s.Fsync(ctx, ino, false) }()
		<-h.Held() // mapped and logged; its data in the held batch
		in := s.itab.peek(ino)
		if in == nil {
			t.Error("the inode is not in memory during its fsync")
		} else if in.extMu.TryRLock() {
			in.extMu.RUnlock()
			t.Error("a reader may map the file's extents while its fsync's data is unwritten")
		}
		h.Release()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
	defer func() { testHookBeforeDeviceRead = nil }()
	buf := make([]byte, blockSize)
	if _, err := s.Read(ino, 0, buf); err != nil || !bytes.Equal(buf, old) && !bytes.Equal(buf, fresh) {
		t.Fatalf("read overtaken by a write and its fsync: %v; old bytes %v, fresh %v", err, bytes.Equal(buf, old), bytes.Equal(buf, fresh))
	}
	if !ran {
		t.Fatal("the hook did not run: the read did not read the device")
	}
	if st := s.Stats(); st.FsyncLogged != 1 || st.DeviceRoundTrips.FsyncData != 0 {
		t.Fatalf("%d fsyncs logged, %d data round trips of their own; want 1, 0 (the data in the log sync)", st.FsyncLogged, st.DeviceRoundTrips.FsyncData)
	}
	if _, err := s.Read(ino, 0, buf); err != nil || !bytes.Equal(buf, fresh) {
		t.Fatalf("read after the fsync: %v, fresh %v", err, bytes.Equal(buf, fresh))
	}
}
