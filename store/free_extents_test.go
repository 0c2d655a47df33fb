package store

import (
	"context"
	"testing"
)

// TestStats_FreeExtents: overwriting every other block of a file leaves
// a hole per block freed once the commits that freed them are durable,
// and the gauge counts them; giving the file back merges them again.
func TestStats_FreeExtents(t *testing.T) {
	s, ino := openWithFile(t, 64<<20, Options{})
	defer closeCheck(t, s)
	ctx := context.Background()
	const blocks = 64
	if _, err := s.Write(ino, 0, make([]byte, blocks*blockSize)); err != nil {
		t.Fatal(err)
	}
	syncTwice := func() {
		t.Helper()
		// The second commit unpins what the first freed.
		for range 2 {
			if err := s.Sync(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	syncTwice()
	before := s.Stats().FreeExtents
	for b := uint64(0); b < blocks; b += 2 {
		if _, err := s.Write(ino, b*blockSize, []byte{1}); err != nil {
			t.Fatal(err)
		}
	}
	syncTwice()
	if got := s.Stats().FreeExtents; got < before+blocks/4 {
		t.Fatalf("after freeing every other block of %d: %d free extents, %d before; want at least %d more", blocks, got, before, blocks/4)
	}
	if err := s.Unlink(RootIno, "f"); err != nil {
		t.Fatal(err)
	}
	syncTwice()
	if got := s.Stats().FreeExtents; got > before {
		t.Fatalf("after deleting the file: %d free extents, %d before it was overwritten", got, before)
	}
}
