package fusefs

import (
	"context"
	"sync"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"ustore/proto"
)

// A dirHandle is one open directory listing. The store lists a directory
// in creation order from a cookie, and a listing resumed from a cookie
// sees every entry that existed throughout exactly once (store.ReadDir),
// so the handle keeps only a cookie and a batch: the kernel's offsets are
// the store's cookies, and seekdir/telldir work after any change.
//
// Offsets: 1 is after ".", 2 after ".."; the store's cookies are 3 and
// up (its first directory index is 2, a cookie is an index plus one), so
// the two never meet, and a cookie of 2 or less lists from the start.
//
// go-fuse calls a handle's methods one at a time (under the handle's
// lock); mu guards it anyway against a future caller that does not.
type dirHandle struct {
	fsys        *FS
	dir, parent uint64

	mu    sync.Mutex
	off   uint64           // the offset of the last entry handed out
	batch []proto.DirEntry // entries fetched, not yet handed out
	ended bool             // the store said the listing ends after batch
}

var (
	_ fs.FileReaddirenter = (*dirHandle)(nil)
	_ fs.FileSeekdirer    = (*dirHandle)(nil)
	_ fs.FileFsyncdirer   = (*dirHandle)(nil)
)

// Readdirent returns the next entry, nil at the end.
func (h *dirHandle) Readdirent(ctx context.Context) (*fuse.DirEntry, syscall.Errno) {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch h.off {
	case 0:
		h.off = 1
		return &fuse.DirEntry{Name: ".", Ino: h.dir, Mode: syscall.S_IFDIR, Off: 1}, 0
	case 1:
		h.off = 2
		return &fuse.DirEntry{Name: "..", Ino: h.parent, Mode: syscall.S_IFDIR, Off: 2}, 0
	}
	if len(h.batch) == 0 && !h.ended {
		es, err := h.fsys.conn().ReadDir(ctx, h.dir, h.off, readDirBatch)
		if err != nil {
			return nil, errnoOf(err)
		}
		h.batch, h.ended = es, len(es) < readDirBatch
	}
	if len(h.batch) == 0 {
		return nil, 0
	}
	e := h.batch[0]
	h.batch = h.batch[1:]
	h.off = e.Cookie
	mode := uint32(syscall.S_IFREG)
	if e.Type == syscall.DT_DIR {
		mode = syscall.S_IFDIR
	}
	return &fuse.DirEntry{Name: e.Name, Ino: e.Ino, Mode: mode, Off: e.Cookie}, 0
}

// Seekdir goes back or forth to an offset handed out before (or 0).
func (h *dirHandle) Seekdir(_ context.Context, off uint64) syscall.Errno {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.off, h.batch, h.ended = off, nil, false
	return 0
}

// Fsyncdir makes the directory durable, names and all.
func (h *dirHandle) Fsyncdir(ctx context.Context, flags uint32) syscall.Errno {
	return errnoOf(h.fsys.conn().Fsync(ctx, h.dir, flags&fsyncDatasync != 0))
}
