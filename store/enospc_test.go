package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"syscall"
	"testing"
	"time"

	"ustore/dev"
	"ustore/dev/memdev"
)

// ENOSPC tests: a full device refuses writes and creates with ENOSPC when
// they are made — never later, at writeback or commit — loses nothing
// accepted before, stays consistent (Check), and can always be emptied:
// unlink works on a full device and the space it frees is found again
// (the store commits on its own to unpin it).

// fileModel is what the files of a test should hold.
type fileModel struct {
	inos  map[string]Ino
	datas map[string][]byte
}

func newFileModel() *fileModel {
	return &fileModel{inos: map[string]Ino{}, datas: map[string][]byte{}}
}

// write writes data to name at off and records what the store accepted:
// the n bytes it reports written, even with an error.
func (m *fileModel) write(s *Store, name string, off int, data []byte) (int, error) {
	n, err := s.Write(m.inos[name], uint64(off), data)
	if n < 0 || n > len(data) {
		panic(fmt.Sprintf("write returned %d of %d", n, len(data)))
	}
	if n > 0 {
		cur := m.datas[name]
		if len(cur) < off+n {
			cur = append(cur, make([]byte, off+n-len(cur))...)
		}
		copy(cur[off:], data[:n])
		m.datas[name] = cur
	}
	return n, err
}

// verify compares every file with the model.
func (m *fileModel) verify(t *testing.T, s *Store, when string) {
	t.Helper()
	for name, want := range m.datas {
		a, err := s.Stat(m.inos[name])
		if err != nil || a.Size != uint64(len(want)) {
			t.Fatalf("%s: stat %s: size %d, want %d, %v", when, name, a.Size, len(want), err)
		}
		got := make([]byte, len(want))
		if n, err := s.Read(m.inos[name], 0, got); err != nil || n != len(want) || !bytes.Equal(got, want) {
			t.Fatalf("%s: %s: read %d of %d bytes, %v, equal %v", when, name, n, len(want), err, bytes.Equal(got, want))
		}
	}
}

// syncRemountVerify ends an ENOSPC test: a sync must succeed (the space of
// every accepted write and create was reserved when it was accepted, so
// its writeback cannot find the device full), m must hold after the sync
// and again after a remount, and fsck must pass as s closes.
func syncRemountVerify(t *testing.T, s *Store, d dev.Device, opts Options, m *fileModel) {
	t.Helper()
	if err := s.Sync(context.Background()); err != nil {
		t.Fatalf("sync: the space of accepted writes went elsewhere: %v (space %+v)", err, s.Engine().Space())
	}
	m.verify(t, s, "after sync")
	s = remount(t, s, d, opts)
	m.verify(t, s, "after remount")
	closeCheck(t, s)
}

func wantENOSPC(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("%s: %v, want ENOSPC", what, err)
	}
}

// fill writes files of fileSize in chunk-sized writes until a write fails,
// which must be with ENOSPC; then tops up with single blocks until those
// fail too. It returns the names it made.
func fill(t *testing.T, s *Store, m *fileModel, prefix string, fileSize, chunk int) []string {
	t.Helper()
	var names []string
	for i := 0; ; i++ {
		name := fmt.Sprintf("%s%03d", prefix, i)
		a, err := s.Create(RootIno, name, 0o644)
		if err != nil {
			wantENOSPC(t, "create "+name, err)
			return names
		}
		m.inos[name], m.datas[name] = a.Ino, nil
		names = append(names, name)
		for off := 0; off < fileSize; off += chunk {
			_, err := m.write(s, name, off, patternData(byte(i), chunk))
			if err == nil {
				continue
			}
			wantENOSPC(t, fmt.Sprintf("write %s at %d", name, off), err)
			// The device is full for chunks; top it up block by block.
			off = len(m.datas[name])
			for k := 0; ; k++ {
				if _, err := m.write(s, name, off, patternData(byte(k), blockSize)); err != nil {
					wantENOSPC(t, fmt.Sprintf("top-up write %s at %d", name, off), err)
					return names
				}
				off += blockSize
			}
		}
	}
}

func usedData(m *fileModel) int {
	n := 0
	for _, d := range m.datas {
		n += len(d)
	}
	return n
}

func TestENOSPC_Fill(t *testing.T) {
	const size = 48 << 20
	d := newTestDevice(t, size)
	opts := Options{DirtyBytes: 8 << 20}
	s := openTest(t, d, opts)
	ctx := context.Background()
	m := newFileModel()
	// Made now, written at the end: a create at the end would commit (to
	// unpin the space the unlinks free) before the write that should.
	a, err := s.Create(RootIno, "again", 0o644)
	if err != nil {
		t.Fatal(err)
	}
	m.inos["again"] = a.Ino
	names := fill(t, s, m, "f", 4<<20, 1<<20)
	t.Logf("full after %d files, %.1f MiB of data on a %d MiB device; space %+v",
		len(names), float64(usedData(m))/(1<<20), size>>20, s.Engine().Space())
	if usedData(m) < size/2 {
		t.Fatalf("only %d bytes fit on a %d byte device", usedData(m), size)
	}
	// Refused at write time, so writeback and the commit have room for
	// everything accepted.
	if err := s.Sync(ctx); err != nil {
		t.Fatalf("sync of everything accepted: %v", err)
	}
	if st := s.Stats(); st.WritebackErrors != 0 || st.DirtyBytes != 0 {
		t.Fatalf("after sync: %+v", st)
	}
	m.verify(t, s, "before remount")
	if err := s.Check(); err != nil {
		t.Fatalf("fsck of a full device: %v", err)
	}
	s = remount(t, s, d, opts)
	m.verify(t, s, "after remount")

	// Full again after the remount, but not necessarily at once: the
	// reservation is conservative while data is buffered — a page under
	// writeback holds its reservation and its allocated block, and each
	// page reserves a 1/32 share for metadata that writeback mostly does
	// not use — so some room may show once everything is written. It must
	// end in ENOSPC, and be bounded by that slack.
	before := usedData(m)
	topUp := names[len(names)-1]
	for {
		_, err := m.write(s, topUp, len(m.datas[topUp]), patternData(7, 1<<20))
		if err != nil {
			wantENOSPC(t, "write to a full device after remount", err)
			break
		}
	}
	extra := usedData(m) - before
	t.Logf("%d KiB more accepted after the remount", extra>>10)
	if slack := int(opts.DirtyBytes) + before/32 + 1<<20; extra > slack {
		t.Fatalf("%d bytes refused as ENOSPC before the remount fit after it (slack %d)", extra, slack)
	}
	if err := s.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	m.verify(t, s, "after top-up")

	// Overwrites need new blocks (copy-on-write): ENOSPC or success, never
	// a loss.
	if _, err := m.write(s, names[0], 0, patternData(8, 1<<20)); err != nil {
		wantENOSPC(t, "overwrite on a full device", err)
	}

	// Creates on a full device: each succeeds or fails with ENOSPC.
	created, refused := 0, 0
	for i := range 3000 {
		cname := fmt.Sprintf("c%04d", i)
		a, err = s.Create(RootIno, cname, 0o644)
		if err != nil {
			wantENOSPC(t, "create "+cname, err)
			refused++
			if refused > 20 {
				break
			}
			continue
		}
		created++
		m.inos[cname], m.datas[cname] = a.Ino, nil
		// A few bytes inline: metadata only.
		if _, err := m.write(s, cname, 0, []byte(cname)); err != nil {
			wantENOSPC(t, "small write "+cname, err)
		}
	}
	t.Logf("creates on the full device: %d made, then refused; space %+v", created, s.Engine().Space())
	if refused == 0 {
		t.Fatal("3000 creates on a full device, none refused")
	}
	if err := s.Sync(ctx); err != nil {
		t.Fatalf("sync after creates on a full device: %v", err)
	}
	if err := s.Check(); err != nil {
		t.Fatalf("fsck after creates on a full device: %v", err)
	}
	m.verify(t, s, "after creates")

	// Unlink always works on a full device: every small file, then one big.
	for i := range created {
		cname := fmt.Sprintf("c%04d", i)
		if err := s.Unlink(RootIno, cname); err != nil {
			t.Fatalf("unlink %s on a full device: %v", cname, err)
		}
		delete(m.inos, cname)
		delete(m.datas, cname)
	}
	victim := names[1]
	freed := len(m.datas[victim])
	if err := s.Unlink(RootIno, victim); err != nil {
		t.Fatalf("unlink %s on a full device: %v", victim, err)
	}
	delete(m.inos, victim)
	delete(m.datas, victim)

	// The freed blocks are pinned until a commit; a write that needs them
	// must not fail: the store commits to unpin them.
	sp := s.Engine().Space()
	if sp.Pinned < uint64(freed) || sp.Available >= uint64(freed)/2 {
		t.Fatalf("after unlinking %d bytes: space %+v: nothing to exercise", freed, sp)
	}
	commits := s.Engine().Stats().Commits
	for off := 0; off < freed-(1<<20); off += 1 << 20 {
		if _, err := m.write(s, "again", off, patternData(42, 1<<20)); err != nil {
			t.Fatalf("write %d of %d bytes into the room an unlink made: %v (space %+v)", off, freed, err, s.Engine().Space())
		}
	}
	if s.Engine().Stats().Commits == commits {
		t.Fatal("the write into unpinned space made no commit")
	}
	if err := s.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	m.verify(t, s, "after refill")

	// Full again (topped up block by block), then an unlink: a create
	// right after it must find the room — the store commits to unpin it.
	for off := len(m.datas["again"]); ; off += blockSize {
		if _, err := m.write(s, "again", off, patternData(43, blockSize)); err != nil {
			wantENOSPC(t, "top-up", err)
			break
		}
	}
	if err := s.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	for i := 0; ; i++ {
		if _, err := s.Create(RootIno, fmt.Sprintf("probe%d", i), 0o644); err != nil {
			wantENOSPC(t, "create on a full device", err)
			break
		}
		if i == 100 {
			t.Fatal("100 creates on a full device succeeded: nothing to exercise")
		}
	}
	victim = names[2]
	if err := s.Unlink(RootIno, victim); err != nil {
		t.Fatalf("unlink %s on a full device: %v", victim, err)
	}
	delete(m.inos, victim)
	delete(m.datas, victim)
	if a, err = s.Create(RootIno, "after-unlink", 0o644); err != nil {
		t.Fatalf("create after an unlink freed 4 MiB: %v (space %+v)", err, s.Engine().Space())
	}
	m.inos["after-unlink"] = a.Ino
	m.verify(t, s, "after create")
	s = remount(t, s, d, opts)
	m.verify(t, s, "after refill and remount")
	closeCheck(t, s)
}

// TestENOSPC_DirtyThenCreates: with a budget larger than the device, a
// full device's data is all still buffered when the creates come. Space
// promised to buffered data must not go to new inodes: the creates are
// refused (or fit), and the writeback that follows succeeds.
func TestENOSPC_DirtyThenCreates(t *testing.T) {
	const size = 32 << 20
	d := newTestDevice(t, size)
	opts := Options{DirtyBytes: 128 << 20, DirtyExpire: 1 << 40}
	s := openTest(t, d, opts)
	m := newFileModel()
	names := fill(t, s, m, "f", 8<<20, 1<<20)
	if st := s.Stats(); st.DirtyBytes < int64(usedData(m))/2 {
		t.Fatalf("only %d of %d bytes still buffered: %+v", st.DirtyBytes, usedData(m), st)
	}
	made := 0
	for i := range 2000 {
		cname := fmt.Sprintf("c%04d", i)
		a, err := s.Create(RootIno, cname, 0o644)
		if err != nil {
			wantENOSPC(t, "create "+cname, err)
			continue
		}
		made++
		m.inos[cname], m.datas[cname] = a.Ino, nil
		if _, err := m.write(s, cname, 0, bytes.Repeat([]byte{byte(i)}, 100)); err != nil {
			wantENOSPC(t, "small write "+cname, err)
		}
	}
	t.Logf("%d files (%d MiB, buffered), then %d of 2000 creates made", len(names), usedData(m)>>20, made)
	syncRemountVerify(t, s, d, opts, m)
}

// TestENOSPC_Device: a device that itself fails writes with ENOSPC (a
// thin-provisioned volume) fails writeback, which is reported by fsync and
// sync and keeps the pages dirty; once the device takes writes again,
// nothing is lost.
func TestENOSPC_Device(t *testing.T) {
	d := newTestDevice(t, 32<<20)
	s := openTest(t, d, Options{DirtyBytes: 8 << 20, DirtyExpire: 1 << 40})
	m := newFileModel()
	a, err := s.Create(RootIno, "f", 0o644)
	if err != nil {
		t.Fatal(err)
	}
	m.inos["f"] = a.Ino
	if _, err := m.write(s, "f", 0, patternData(5, 1<<20)); err != nil {
		t.Fatal(err)
	}
	d.FailFrom(memdev.OpWrite, 1, syscall.ENOSPC)
	err = s.Fsync(context.Background(), a.Ino, false)
	if err == nil || !errors.Is(err, dev.ErrNoSpace) && !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("fsync on a device that refuses writes: %v, want ENOSPC", err)
	}
	m.verify(t, s, "after the failed fsync")
	d.ClearErrors()
	if err := s.Fsync(context.Background(), a.Ino, false); err != nil {
		t.Fatalf("fsync once the device takes writes: %v", err)
	}
	s = remount(t, s, d, Options{})
	m.verify(t, s, "after remount")
	closeCheck(t, s)
}

// TestENOSPC_Fragmented: free space in small holes only (every other small
// file of a full device unlinked). A write the holes can hold in total is
// accepted; its writeback must then fit it into the holes, not fail for
// want of one contiguous run.
func TestENOSPC_Fragmented(t *testing.T) {
	const size = 16 << 20
	d := newTestDevice(t, size)
	opts := Options{DirtyBytes: 8 << 20}
	s := openTest(t, d, opts)
	ctx := context.Background()
	m := newFileModel()
	var names []string
	for i := 0; ; i++ {
		name := fmt.Sprintf("s%05d", i)
		a, err := s.Create(RootIno, name, 0o644)
		if err != nil {
			wantENOSPC(t, "create", err)
			break
		}
		m.inos[name] = a.Ino
		names = append(names, name)
		if _, err := m.write(s, name, 0, patternData(byte(i), 2*blockSize)); err != nil {
			wantENOSPC(t, "write", err)
			break
		}
	}
	if err := s.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < len(names); i += 2 {
		if err := s.Unlink(RootIno, names[i]); err != nil {
			t.Fatalf("unlink %s: %v", names[i], err)
		}
		delete(m.inos, names[i])
		delete(m.datas, names[i])
	}
	if err := s.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	sp := s.Engine().Space()
	t.Logf("%d small files, every other unlinked: space %+v", len(names), sp)
	a, err := s.Create(RootIno, "big", 0o644)
	if err != nil {
		t.Fatal(err)
	}
	m.inos["big"] = a.Ino
	accepted := 0
	for off := 0; off < int(sp.Available)/2; off += 1 << 20 {
		n, err := m.write(s, "big", off, patternData(77, 1<<20))
		accepted += n
		if err != nil {
			wantENOSPC(t, "write big", err)
			break
		}
	}
	t.Logf("accepted %d bytes into the holes", accepted)
	syncRemountVerify(t, s, d, opts, m)
}

// TestENOSPC_SmallFilesBuffered: many small files, all buffered, fill the
// device. Their writeback CoWs most leaves of the fs and csum trees, and
// the old copies stay pinned until a commit: the space promised to the
// data must come back by a commit, not fail the writeback.
func TestENOSPC_SmallFilesBuffered(t *testing.T) {
	d := newTestDevice(t, 16<<20)
	opts := Options{DirtyBytes: 64 << 20, DirtyExpire: 1 << 40}
	s := openTest(t, d, opts)
	m := newFileModel()
	for i := 0; ; i++ {
		name := fmt.Sprintf("s%05d", i)
		a, err := s.Create(RootIno, name, 0o644)
		if err != nil {
			wantENOSPC(t, "create", err)
			break
		}
		m.inos[name] = a.Ino
		if _, err := m.write(s, name, 0, patternData(byte(i), 2*blockSize)); err != nil {
			wantENOSPC(t, "write", err)
			break
		}
	}
	t.Logf("%d files, %d KiB buffered", len(m.inos), s.Stats().DirtyBytes>>10)
	syncRemountVerify(t, s, d, opts, m)
}

// TestENOSPC_WaitsForWriteback: while a writeback is in progress, its
// pages hold their reservations and the blocks it allocated for them, so
// the device looks fuller than it is. A write that fits once the writeback
// ends must wait for it, not fail with ENOSPC. (TestENOSPC_Fill failed
// about once in 25 runs under -race when the flusher happened to be
// writing back while it refilled the room an unlink made.)
func TestENOSPC_WaitsForWriteback(t *testing.T) {
	d := newTestDevice(t, 24<<20)
	// A budget far above what the test buffers, and a background
	// threshold above it too: only the fsync below writes back.
	opts := Options{DirtyBytes: 64 << 20, DirtyBackgroundBytes: 64 << 20}
	s := openTest(t, d, opts)
	defer closeCheck(t, s)
	ctx := context.Background()
	m := newFileModel()
	for _, name := range []string{"fill", "a", "b"} {
		a, err := s.Create(RootIno, name, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		m.inos[name] = a.Ino
	}
	// Fill the device to a few MiB of free space, everything durable.
	for s.Engine().Space().Available > 4<<20 {
		if _, err := m.write(s, "fill", len(m.datas["fill"]), patternData(1, 1<<20)); err != nil {
			t.Fatal(err)
		}
		if err := s.Sync(ctx); err != nil {
			t.Fatal(err)
		}
	}
	// a: 1 MiB buffered, then written back by an fsync that stalls after
	// allocating its blocks.
	if _, err := m.write(s, "a", 0, patternData(2, 1<<20)); err != nil {
		t.Fatal(err)
	}
	avail := s.Engine().Space().Available
	const aPages, margin = 256, 64
	q := int(avail/spacePerPage) - aPages - margin
	if q < 64 {
		t.Fatalf("setup: %d bytes available leave room for %d pages", avail, q)
	}
	h := d.HoldNext(memdev.HoldWrite) // a writeback's data, after it allocated its blocks
	fsynced := make(chan error, 1)
	go func() { fsynced <- s.Fsync(ctx, m.inos["a"], false) }()
	<-h.Held()

	// b: q pages fit beside a's reservations, but not beside them and
	// a's allocated blocks too.
	wrote := make(chan error, 1)
	go func() {
		_, err := m.write(s, "b", 0, patternData(3, q*blockSize))
		wrote <- err
	}()
	select {
	case err := <-wrote:
		h.Release() // for the deferred closeCheck
		<-fsynced
		t.Fatalf("write of %d pages during a stalled writeback ended before it (space waits %d): %v",
			q, s.Stats().SpaceWaits, err)
	case <-waitFor(func() bool { return s.Stats().SpaceWaits > 0 }):
	}
	h.Release()
	if err := <-fsynced; err != nil {
		t.Fatalf("fsync: %v", err)
	}
	if err := <-wrote; err != nil {
		t.Fatalf("write of %d pages once the writeback ended: %v (space %+v)", q, err, s.Engine().Space())
	}
	if err := s.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	m.verify(t, s, "after the writes")
}

// waitFor closes the channel it returns once cond holds (polled).
func waitFor(cond func() bool) <-chan struct{} {
	c := make(chan struct{})
	go func() {
		for !cond() {
			time.Sleep(time.Millisecond)
		}
		close(c)
	}()
	return c
}
