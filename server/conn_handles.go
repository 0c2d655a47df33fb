package server

import (
	"context"
	"sync"
	"sync/atomic"
	"syscall"

	"ustore/proto"
	"ustore/store"
)

// handleTable is one connection's open files (proto's open and release):
// handle → the inode it holds (store.Open). Handles belong to the
// connection: another connection's are unknown here (EBADF), and every
// one left is released when the connection ends, however it ends
// (releaseAll, after the last request has returned), so a client that
// dies leaves no hold behind — an unlinked file it had open is freed
// then. At most max at once (HandlesPerConnMax): past it open is EMFILE.
//
// Handle numbers come from one counter for the whole server (next), so
// a handle is never given twice, on any connection: a client that lost
// its connection (a redial after a timeout) and releases an old handle on
// the new one gets EBADF, never another file's hold dropped.
//
// mu guards everything but next; it is a leaf lock, never held across a
// store call. pending counts opens between their reservation and their
// entry.
type handleTable struct {
	mu      sync.Mutex
	next    *atomic.Uint64 // the server's last handle given; handles start at 1
	m       map[uint64]store.Ino
	pending int
	max     int
}

// count is the number of handles held or being opened.
func (t *handleTable) count() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.m) + t.pending
}

// open takes a hold on ino and returns a new handle for it.
func (t *handleTable) open(st *store.Store, ino store.Ino) (proto.Reply, *[]byte, error) {
	t.mu.Lock()
	if len(t.m)+t.pending >= t.max {
		t.mu.Unlock()
		return nil, nil, syscall.EMFILE
	}
	t.pending++
	t.mu.Unlock()
	a, err := st.Open(ino)
	t.mu.Lock()
	defer t.mu.Unlock()
	t.pending--
	if err != nil {
		return nil, nil, err
	}
	if t.m == nil {
		t.m = map[uint64]store.Ino{}
	}
	h := t.next.Add(1)
	t.m[h] = ino
	return &proto.OpenReply{Handle: h, Attr: attrOf(a)}, nil, nil
}

// release drops handle h: EBADF if the connection does not hold it.
func (t *handleTable) release(st *store.Store, h uint64) (proto.Reply, *[]byte, error) {
	t.mu.Lock()
	ino, ok := t.m[h]
	delete(t.m, h)
	t.mu.Unlock()
	if !ok {
		return nil, nil, syscall.EBADF
	}
	return emptyOr(st.Release(ino))
}

// releaseAll releases every handle left, when the connection has ended
// and no request of it runs; it returns how many there were.
func (t *handleTable) releaseAll(st *store.Store) (int, error) {
	t.mu.Lock()
	m := t.m
	t.m = nil
	t.mu.Unlock()
	var first error
	for _, ino := range m {
		if err := st.Release(ino); err != nil && first == nil {
			first = err
		}
	}
	return len(m), first
}

// dispatch runs req: the handle ops on the connection's table, the others
// on the store (Server.dispatch).
func (c *conn) dispatch(ctx context.Context, req proto.Request, limits proto.Limits) (proto.Reply, *[]byte, error) {
	switch r := req.(type) {
	case *proto.Open:
		return c.handles.open(c.s.st, store.Ino(r.Ino))
	case *proto.Release:
		return c.handles.release(c.s.st, r.Handle)
	}
	return c.s.dispatch(ctx, req, limits)
}
