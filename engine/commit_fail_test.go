package engine

import (
	"errors"
	"syscall"
	"testing"

	"ustore/dev"
	"ustore/dev/memdev"
	"ustore/journal"
)

// TestEngine_Commit_FailsReadOnly: a commit whose I/O fails leaves the
// previous commit intact on disk and the engine read-only with a clear
// error; nothing acknowledged as committed is lost.
func TestEngine_Commit_FailsReadOnly(t *testing.T) {
	for _, kind := range []memdev.OpKind{memdev.OpWrite, memdev.OpFlush} {
		t.Run(kind.String(), func(t *testing.T) {
			e, d := newTestEngine(t, 64<<20, 4096)
			tr, _ := e.Start()
			tree, _ := e.CreateTree(tr, testTree)
			m := model{}
			for i := uint64(0); i < 500; i++ {
				v := testValue(i, 80)
				if err := tree.InsertItem(tr, testKey(i), v); err != nil {
					t.Fatal(err)
				}
				m[testKey(i)] = v
			}
			tr.End()
			committedGen := commitGen(t, e)

			tr, _ = e.Start()
			for i := uint64(500); i < 1000; i++ {
				if err := tree.InsertItem(tr, testKey(i), testValue(i, 80)); err != nil {
					t.Fatal(err)
				}
			}
			tr.End()
			d.InjectError(kind, 1, syscall.EIO)
			_, err := e.Commit(t.Context())
			if !errors.Is(err, dev.ErrIO) {
				t.Fatalf("commit with a failing %v: %v, want an I/O error", kind, err)
			}
			if _, err := e.Start(); !errors.Is(err, ErrReadOnly) {
				t.Fatalf("Start after a failed commit: %v, want ErrReadOnly", err)
			}
			if e.Committed(journal.Transid(committedGen+1)) || !e.Committed(journal.Transid(committedGen)) {
				t.Fatal("Committed() moved past the failed commit")
			}
			t.Logf("%v", err)
			_ = e.Close(t.Context())

			// The device as a crash would leave it: the failed commit's
			// superblock never became durable.
			crashed := d.Crash(memdev.KeepNone())
			e2 := mount(t, crashed)
			if e2.sb.Generation != committedGen {
				t.Fatalf("mounted generation %d, want the last good commit %d", e2.sb.Generation, committedGen)
			}
			compareTree(t, e2.Tree(testTree), m)
			check(t, e2)
			closeEngine(t, e2)
		})
	}
}
