package fusefs

import (
	"context"
	"sync"

	"ustore/client"
	"ustore/proto"
)

// openFiles keeps the files open through this mount alive on the server:
// for each inode with opens, one server handle (proto's open, a hold on
// the inode: the store keeps a file whose last name goes while it is held
// as an orphan, readable and writable, and frees it at the last release),
// counted here by the opens and pins it stands for and released with the
// last of them. POSIX wants an open file usable until its last close,
// whoever unlinks or renames over its name meanwhile; the hold does that
// on the server, for every client at once.
//
// The handles are all on one connection of the mount (conn): a handle
// belongs to the connection that opened it, and the server releases it
// when that connection ends — so a mount that dies leaves no hold behind,
// and the next mount of the store frees nothing twice. A connection that
// holds handles is never closed as idle; a redial after a frame or write
// timeout loses them (the server released them with the old connection),
// and their releases then answer EBADF, since the server never gives a
// handle number twice.
//
// mu guards files and pins and is never held across a request. An open of
// an inode whose handle is being taken waits for it (cond), so an inode
// has at most one handle here; a release that ends an inode's count
// removes its entry before it sends the release, and an open after that
// takes a new handle (the server counts both holds).
type openFiles struct {
	conn  *client.Client
	mu    sync.Mutex
	cond  *sync.Cond // on mu: signalled when an open's handle request ends
	files map[uint64]*openFile
	// pins marks the inodes renamed over that keep a hold until the
	// kernel forgets them (one count of their openFile, pin).
	pins map[uint64]bool
}

// openFile is one inode's handle and the opens and pins it stands for.
type openFile struct {
	count   int
	handle  uint64
	opening bool // the handle's open request is in flight: count is 0
}

func newOpenFiles(conn *client.Client) *openFiles {
	o := &openFiles{conn: conn, files: map[uint64]*openFile{}, pins: map[uint64]bool{}}
	o.cond = sync.NewCond(&o.mu)
	return o
}

// opened counts an open of ino, taking the inode's handle on the server if
// it has none here. An error is the server's answer to that open (ENOENT
// for an inode gone: the caller says ESTALE), and counts nothing. The
// attributes come back when the server was asked (nil when the inode was
// held already).
func (o *openFiles) opened(ctx context.Context, ino uint64) (*proto.Attr, error) {
	o.mu.Lock()
	for {
		f := o.files[ino]
		if f == nil {
			break
		}
		if !f.opening {
			f.count++
			o.mu.Unlock()
			return nil, nil
		}
		o.cond.Wait()
	}
	f := &openFile{opening: true}
	o.files[ino] = f
	o.mu.Unlock()
	// Not cancelled with the kernel's request: a handle whose reply were
	// dropped would stay held until the connection ends.
	h, a, err := o.conn.Open(context.WithoutCancel(ctx), ino)
	o.mu.Lock()
	defer o.mu.Unlock()
	defer o.cond.Broadcast()
	if err != nil {
		delete(o.files, ino)
		return nil, err
	}
	f.opening, f.handle, f.count = false, h, 1
	return &a, nil
}

// released counts a release of ino; the last one releases its handle, and
// the server frees the inode if its names are all gone and no other
// client holds it. A failure has no one to tell (close returned already):
// the handle goes with the connection at the latest.
func (o *openFiles) released(ctx context.Context, ino uint64) {
	o.mu.Lock()
	f := o.files[ino]
	if f == nil || f.opening {
		o.mu.Unlock()
		return
	}
	if f.count--; f.count > 0 {
		o.mu.Unlock()
		return
	}
	delete(o.files, ino)
	o.mu.Unlock()
	o.conn.Release(context.WithoutCancel(ctx), f.handle)
}

// pin takes a hold on ino before a rename over one of its names, kept
// until the kernel forgets ino (unpin): the name never stops existing, so
// an open of it must never fail, yet a program may have walked to ino
// just before the rename and open it just after — the kernel retries an
// open that finds its inode gone (ESTALE) only once, and renames in a
// loop can beat that retry. done undoes the pin if the rename fails. An
// unlink needs no pin: an open racing an unlink may fail with ENOENT.
func (o *openFiles) pin(ctx context.Context, ino uint64) (done func(renamed bool)) {
	o.mu.Lock()
	pinned := o.pins[ino]
	if !pinned {
		o.pins[ino] = true
	}
	o.mu.Unlock()
	if pinned {
		return func(bool) {}
	}
	if _, err := o.opened(ctx, ino); err != nil {
		// Gone already (or the server refused): nothing to keep; the
		// rename decides.
		o.mu.Lock()
		delete(o.pins, ino)
		o.mu.Unlock()
		return func(bool) {}
	}
	return func(renamed bool) {
		if !renamed {
			o.unpin(ctx, ino)
		}
	}
}

// unpin releases the pin of ino, if pin made one: the kernel has
// forgotten the inode, so no program can reach it any more.
func (o *openFiles) unpin(ctx context.Context, ino uint64) {
	o.mu.Lock()
	pinned := o.pins[ino]
	delete(o.pins, ino)
	o.mu.Unlock()
	if pinned {
		o.released(ctx, ino)
	}
}
