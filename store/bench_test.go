package store

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
)

// BenchmarkStore_FsyncCommitted is fsync of a file whose last change is
// already committed: nothing to write back, and the committed check is one
// atomic load (no commit, no device I/O). It fails unless every fsync took
// that path (Stats().FsyncCommitted).
func BenchmarkStore_FsyncCommitted(b *testing.B) {
	s, ino := openWithFile(b, 64<<20, Options{})
	defer closeCheck(b, s)
	ctx := context.Background()
	if _, err := s.Write(ino, 0, make([]byte, 64<<10)); err != nil {
		b.Fatal(err)
	}
	// A commit, not an fsync: an fsync logs the change, and the fsyncs
	// after it would find it in the log (FsyncInLog), not committed.
	if err := s.Sync(ctx); err != nil {
		b.Fatal(err)
	}
	before := s.Stats()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if err := s.Fsync(ctx, ino, false); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	after := s.Stats()
	fast := after.FsyncCommitted - before.FsyncCommitted
	slow := after.FsyncCommit - before.FsyncCommit
	if slow != 0 || fast == 0 {
		b.Fatalf("fsync of a committed file: %d took the lock-free path, %d committed; want all on the lock-free path", fast, slow)
	}
}

// BenchmarkStore_WriteBuffered is 4 KiB block-aligned overwrites of a 16
// MiB file held in memory: after the first pass every block has its dirty
// page, so a write is a lookup and a copy (16 MiB stays under the
// background writeback threshold).
func BenchmarkStore_WriteBuffered(b *testing.B) {
	d := newTestDevice(b, 128<<20)
	s := openTest(b, d, Options{})
	defer closeCheck(b, s)
	f, err := s.Create(RootIno, "f", 0o644)
	if err != nil {
		b.Fatal(err)
	}
	const span = 16 << 20
	buf := make([]byte, 4096)
	for i := range buf {
		buf[i] = byte(i)
	}
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	off := uint64(0)
	for b.Loop() {
		if _, err := s.Write(f.Ino, off, buf); err != nil {
			b.Fatal(err)
		}
		// Stride through the file, 1,021 blocks at a time (prime: every
		// block in turn), not sequentially.
		off = (off + 1021*4096) % span
	}
}

// BenchmarkStore_SeqWrite is 1 MiB sequential writes to a memdev, wrapping
// at 64 MiB, with the Sync that makes them durable inside the timing: the
// CPU cost of the buffered copy, writeback (copy, checksum, extent and
// checksum items) and commit, without a disk.
func BenchmarkStore_SeqWrite(b *testing.B) {
	d := newTestDevice(b, 256<<20)
	s := openTest(b, d, Options{DirtyBytes: 32 << 20})
	defer closeCheck(b, s)
	f, err := s.Create(RootIno, "f", 0o644)
	if err != nil {
		b.Fatal(err)
	}
	const span = 64 << 20
	buf := make([]byte, 1<<20)
	for i := range buf {
		buf[i] = byte(i * 7)
	}
	b.SetBytes(int64(len(buf)))
	off := uint64(0)
	b.ResetTimer()
	// Not b.Loop: it stops the timer when it ends, and the Sync counts.
	for range b.N {
		if _, err := s.Write(f.Ino, off, buf); err != nil {
			b.Fatal(err)
		}
		off = (off + uint64(len(buf))) % span
	}
	if err := s.Sync(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	b.ReportMetric(float64(s.Stats().ExtentsWritten)/float64(b.N), "extents/op")
}

// TestStore_WritebackBatches checks the writeback of many batches (each
// wbChunkBytes at most, mapped in file order by one goroutine while the
// next is prepared, their pages released batch by batch): a 40 MiB file
// of runs and holes, overwritten by a second writer and read by a third
// while the flusher writes it back, reads back as the model says — before
// and after a remount — and passes fsck.
func TestStore_WritebackBatches(t *testing.T) {
	d := newTestDevice(t, 256<<20)
	s := openTest(t, d, Options{DirtyBytes: 64 << 20})
	ctx := context.Background()
	f, err := s.Create(RootIno, "f", 0o644)
	if err != nil {
		t.Fatal(err)
	}
	const size = 40 << 20
	model := make([]byte, size)
	rng := rand.New(rand.NewPCG(3, 4))
	write := func(off int, data []byte) {
		if _, err := s.Write(f.Ino, uint64(off), data); err != nil {
			t.Fatal(err)
		}
		copy(model[off:], data)
	}
	// Runs of 1 to 300 blocks with holes between them: batches of many
	// extents, extents cut at maxExtentBlocks.
	for off := 0; off < size; {
		n := min((1+rng.IntN(300))*blockSize, size-off)
		data := make([]byte, n)
		for i := range data {
			data[i] = byte(rng.Uint32())
		}
		write(off, data)
		off += n + rng.IntN(4)*blockSize
	}
	stop := make(chan struct{})
	readerDone := make(chan error, 1)
	go func() {
		// Reads race with writeback; a read never fails.
		buf := make([]byte, 1<<20)
		for {
			select {
			case <-stop:
				readerDone <- nil
				return
			default:
			}
			if _, err := s.Read(f.Ino, uint64(rand.IntN(size-len(buf))), buf); err != nil {
				readerDone <- err
				return
			}
		}
	}()
	syncDone := make(chan error, 1)
	go func() { syncDone <- s.Sync(ctx) }()
	// Overwrites while the sync writes back: partial blocks, across runs.
	for range 2000 {
		off := rng.IntN(size - 3*blockSize)
		data := make([]byte, 1+rng.IntN(3*blockSize))
		for i := range data {
			data[i] = byte(rng.Uint32())
		}
		write(off, data)
	}
	if err := <-syncDone; err != nil {
		t.Fatal(err)
	}
	close(stop)
	if err := <-readerDone; err != nil {
		t.Fatalf("read during writeback: %v", err)
	}
	check := func(when string) {
		got := make([]byte, size)
		if n, err := s.Read(f.Ino, 0, got); err != nil || n != size {
			t.Fatalf("%s: read %d bytes: %v", when, n, err)
		}
		if !bytes.Equal(got, model) {
			i := 0
			for got[i] == model[i] {
				i++
			}
			t.Fatalf("%s: first difference at offset %d (block %d)", when, i, i/blockSize)
		}
	}
	check("after sync")
	closeCheck(t, s)
	s = openTest(t, d, Options{})
	check("after remount")
	if st := s.Stats(); st.DirtyBytes != 0 {
		t.Fatalf("dirty bytes after remount: %d", st.DirtyBytes)
	}
	closeCheck(t, s)
}

// BenchmarkStore_OverwriteFsync is fsync-randwrite's cycle in process: four
// 4 KiB writes at random blocks of a laid-out 8 MiB file, then an fsync,
// on a memdev. An op is the cycle; its time is the store's CPU for the
// writeback of four overwrites (each replacing or splitting an extent item
// and a checksum item), the inode's logging and the log sync, without a
// disk or a socket.
func BenchmarkStore_OverwriteFsync(b *testing.B) {
	s, ino := openWithFile(b, 256<<20, Options{})
	defer closeCheck(b, s)
	ctx := context.Background()
	const blocks = 2048
	buf := make([]byte, 4096)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range buf {
		buf[i] = byte(rng.Uint32())
	}
	if _, err := s.Write(ino, 0, bytes.Repeat(buf, blocks)); err != nil {
		b.Fatal(err)
	}
	if err := s.Sync(ctx); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		for range 4 {
			if _, err := s.Write(ino, rng.Uint64N(blocks)*4096, buf); err != nil {
				b.Fatal(err)
			}
		}
		if err := s.Fsync(ctx, ino, false); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStore_Meta is the store's own CPU for each metadata op of bench
// meta, in process on a memdev (no socket, no device wait): creates of
// empty files in one directory, a lookup of each, a rename of each within
// the directory, an unlink of each. Each op runs over names the previous
// one left, so the directory holds b.N entries at most. What a request
// through the service costs beyond this is the request path's.
func BenchmarkStore_Meta(b *testing.B) {
	d := newTestDevice(b, 512<<20)
	s := openTest(b, d, Options{})
	defer closeCheck(b, s)
	dir, err := s.Mkdir(RootIno, "d", 0o755)
	if err != nil {
		b.Fatal(err)
	}
	name := func(p string, i int) string { return fmt.Sprintf("%s%08d", p, i) }
	// Each op's names are the previous op's: created as a…, renamed to
	// r…; made counts the names of each prefix in the directory.
	var made struct{ a, r int }
	// run times f(0), f(1), …; with needs, it first makes (untimed) the
	// names of that prefix an op beyond the previous op's count needs.
	run := func(op string, needs *int, prefix string, f func(i int) error) {
		b.Run(op, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				if needs != nil && i == *needs {
					b.StopTimer()
					for end := i + 1000; *needs < end; *needs++ {
						if _, err := s.Create(dir.Ino, name(prefix, *needs), 0o644); err != nil {
							b.Fatal(err)
						}
					}
					b.StartTimer()
				}
				if err := f(i); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	run("create", nil, "", func(int) error {
		_, err := s.Create(dir.Ino, name("a", made.a), 0o644)
		made.a++
		return err
	})
	run("lookup", &made.a, "a", func(i int) error { _, err := s.Lookup(dir.Ino, name("a", i)); return err })
	run("rename", &made.a, "a", func(i int) error {
		made.r = max(made.r, i+1)
		return s.Rename(dir.Ino, name("a", i), dir.Ino, name("r", i))
	})
	run("unlink", &made.r, "r", func(i int) error { return s.Unlink(dir.Ino, name("r", i)) })
}
