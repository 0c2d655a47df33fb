package store

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"strings"
	"testing"

	"ustore/dev"
	"ustore/dev/memdev"
	"ustore/engine"
)

// TestSuperblockRot_FsyncedFilesSurvive is issue 14's attack on a fresh
// image: files written and fsynced (each fsync a log sync, acknowledged
// once its superblock is durable), a power cut, then one flipped byte in
// the newest superblock. Mount must still find every fsynced file — the
// superblock's mirror holds the same sequence — and fsck must report the
// damaged copy (which mount rewrote) and pass.
func TestSuperblockRot_FsyncedFilesSurvive(t *testing.T) {
	ctx := context.Background()
	d := newTestDevice(t, 64<<20)
	s, err := Open(d, crashOptions())
	if err != nil {
		t.Fatal(err)
	}
	const files = 40
	for i := range files {
		a, err := s.Create(RootIno, fmt.Sprintf("acked-%02d", i), 0o644)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Write(a.Ino, 0, crashData(i, 0, 3000+i)); err != nil {
			t.Fatal(err)
		}
		if err := s.Fsync(ctx, a.Ino, false); err != nil {
			t.Fatal(err)
		}
	}
	if st := s.Stats(); st.FsyncLogged == 0 {
		t.Fatalf("no fsync was logged: %+v", st)
	}
	// Only what the fsyncs flushed survives.
	c := d.Crash(memdev.KeepNone())
	s.Close(ctx)

	// The newest superblock: the primary slot with the higher sequence.
	newest, seq := int64(0), uint64(0)
	for _, slot := range []int64{lcSuperSlot0, lcSuperSlot1} {
		b := lcRead(t, c, slot, lcSuperSize)
		if n := binary.LittleEndian.Uint64(b[lcSbSeq:]); bytes.Equal(b[lcSbMagic:lcSbMagic+8], lcMagic) && n > seq {
			newest, seq = slot, n
		}
	}
	b := lcRead(t, c, newest, lcSuperSize)
	b[lcSbLogChain+3] ^= 0x01
	if err := c.WriteDurable([]dev.IO{{Off: newest, Buf: b}}); err != nil {
		t.Fatal(err)
	}

	s2, err := Open(c, crashOptions())
	if err != nil {
		t.Fatalf("open with one damaged superblock copy: %v", err)
	}
	if rep := s2.Replay(); rep.Lost != nil {
		t.Fatalf("replay: %+v", rep)
	}
	for i := range files {
		name := fmt.Sprintf("acked-%02d", i)
		got, ok := lcContent(t, s2, RootIno, name)
		if !ok || !bytes.Equal(got, crashData(i, 0, 3000+i)) {
			t.Fatalf("%s, fsynced before the damage: present %v, %d bytes; want its %d bytes", name, ok, len(got), 3000+i)
		}
	}
	r := engine.Check(s2.Engine())
	if !strings.Contains(fmt.Sprint(r.Warnings), fmt.Sprint(newest)) {
		t.Errorf("fsck does not report the damaged copy at %d: warnings %v", newest, r.Warnings)
	}
	closeCheck(t, s2)
}
