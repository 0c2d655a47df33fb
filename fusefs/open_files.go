package fusefs

import (
	"context"
	"fmt"
	"os"
	"sync"
	"syscall"
	"time"

	"ustore/client"
	"ustore/proto"
)

// unlinkedDir is the directory, at the store's root, where the mount
// keeps the names of files unlinked (or renamed over) while open. The
// store frees an inode with its last name, and POSIX wants an open file
// readable and writable until its last close: the mount gives such a file
// a hidden hard link first, as the NFS client does (its .nfsXXXX files),
// and removes that name at the last close. The name is hidden from the
// mount's listing and lookups of the root.
//
// A mount that dies with files open leaves their names there (as NFS
// leaves .nfs files): `ustore ls /.ustore-unlinked`, `ustore rm` them.
// The store's own open-file tracking (orphan items, freed at mount) would
// make this unnecessary; it does not exist yet.
const unlinkedDir = ".ustore-unlinked"

// openFiles counts the opens of each inode through this mount and the
// hidden names kept for the ones unlinked meanwhile, under mu (never held
// across a store call). keepAside counts itself as an open from before it
// makes a name until the store has removed the other, so the last release
// — keepAside's own, if the program closed meanwhile — always comes after
// both, sees every hidden name and removes them.
//
// An open racing with the removal of its inode's last name (the kernel
// looked the name up before the unlink or rename, and opens after it
// began) waits until the removal is done (removing, cond): then either it
// was counted first, and keepAside kept the inode, or it comes after, and
// finds the inode gone (ESTALE: the kernel looks the name up again).
// Without the wait, the open could check the inode just before the store
// frees it, and the program would hold a descriptor on nothing.
type openFiles struct {
	mu       sync.Mutex
	cond     *sync.Cond     // on mu: signalled when a removal ends
	count    map[uint64]int // opens not yet released, per inode
	removing map[uint64]int // removals in flight of an inode's last names
	// forgetPins marks the inodes renamed over that keep a hidden name
	// until the kernel forgets them (one count of count, keepAside).
	forgetPins map[uint64]bool
	hidden     map[uint64][]string // names in unlinkedDir, per inode
	seq        uint64
	prefix     string // this mount's names: pid and start time, unique among mounts

	dirMu  sync.Mutex // serializes finding or making unlinkedDir
	dirIno uint64     // unlinkedDir's inode, once known (under dirMu)
}

func newOpenFiles() *openFiles {
	o := &openFiles{count: map[uint64]int{}, removing: map[uint64]int{}, hidden: map[uint64][]string{}, forgetPins: map[uint64]bool{},
		prefix: fmt.Sprintf("%d-%d", os.Getpid(), time.Now().UnixNano())}
	o.cond = sync.NewCond(&o.mu)
	return o
}

// opened counts an open of ino, once no removal of one of its names is in
// flight.
func (o *openFiles) opened(ino uint64) {
	o.mu.Lock()
	for o.removing[ino] > 0 {
		o.cond.Wait()
	}
	o.count[ino]++
	o.mu.Unlock()
}

// released counts a release of ino; the last one removes ino's hidden
// names, and with them (if no other name is left) the inode. An open
// meanwhile waits for that (removing), then finds the inode or not.
func (f *FS) released(ctx context.Context, ino uint64) {
	o := f.open
	o.mu.Lock()
	if o.count[ino]--; o.count[ino] > 0 {
		o.mu.Unlock()
		return
	}
	names := o.hidden[ino]
	delete(o.count, ino)
	delete(o.hidden, ino)
	if len(names) == 0 {
		o.mu.Unlock()
		return
	}
	o.removing[ino]++
	o.mu.Unlock()
	defer o.removed(ino)
	dir := f.open.dir()
	for _, name := range names {
		// A failure leaves the name in unlinkedDir: nothing is lost but
		// space, and release has no one to tell (close returned already).
		f.conn().Unlink(ctx, dir, name)
	}
}

// forgotten releases the forget pin of ino, if keepAside made one: the
// kernel has forgotten the inode, so no program can reach it any more.
func (f *FS) forgotten(ctx context.Context, ino uint64) {
	o := f.open
	o.mu.Lock()
	pinned := o.forgetPins[ino]
	delete(o.forgetPins, ino)
	o.mu.Unlock()
	if pinned {
		f.released(ctx, ino)
	}
}

// removed ends a removal that opens of ino wait for.
func (o *openFiles) removed(ino uint64) {
	o.mu.Lock()
	if o.removing[ino]--; o.removing[ino] == 0 {
		delete(o.removing, ino)
	}
	o.cond.Broadcast()
	o.mu.Unlock()
}

// keepAside gives ino a hidden name if it is open, before the caller
// removes or replaces one of its names; the caller calls done once the
// store has answered that, whatever the answer.
//
// With untilForget (a rename over ino's name) it does so even if ino is
// not open, and keeps the name until the kernel forgets ino too: the name
// never stops existing, so an open of it must never fail, yet a program
// may have walked to ino just before the rename and open it just after —
// the kernel retries an open that finds its inode gone (ESTALE) only once,
// and renames in a loop can beat that retry. An unlink needs no such pin:
// an open racing an unlink may fail with ENOENT.
func (f *FS) keepAside(ctx context.Context, ino uint64, untilForget bool) (done func(), err error) {
	o := f.open
	o.mu.Lock()
	if o.count[ino] == 0 && !untilForget {
		o.removing[ino]++
		o.mu.Unlock()
		return func() { o.removed(ino) }, nil
	}
	// keepAside's own open, released by done: until the store has
	// removed the name, the opens may all be released and new ones come,
	// and the hidden name must survive that.
	o.count[ino]++
	// The forget pin: released by forgotten. The kernel cannot forget ino
	// before the rename returns (it holds the target's dentry).
	pinned := untilForget && !o.forgetPins[ino]
	if pinned {
		o.forgetPins[ino] = true
		o.count[ino]++
	}
	o.seq++
	name := fmt.Sprintf("%s-%d-%d", o.prefix, ino, o.seq)
	o.mu.Unlock()
	done = func() { f.released(ctx, ino) }
	if pinned {
		defer func() {
			if err != nil {
				f.forgotten(ctx, ino)
			}
		}()
	}

	dir, err := f.unlinkedDir(ctx)
	if err == nil {
		_, err = f.conn().Link(ctx, ino, dir, name)
	}
	if err != nil {
		done()
		return nil, err
	}
	o.mu.Lock()
	o.hidden[ino] = append(o.hidden[ino], name)
	o.mu.Unlock()
	return done, nil
}

// dir returns unlinkedDir's inode, known once a name was put there.
func (o *openFiles) dir() uint64 {
	o.dirMu.Lock()
	defer o.dirMu.Unlock()
	return o.dirIno
}

// unlinkedDir finds or makes unlinkedDir.
func (f *FS) unlinkedDir(ctx context.Context) (uint64, error) {
	o := f.open
	o.dirMu.Lock()
	defer o.dirMu.Unlock()
	if o.dirIno != 0 {
		return o.dirIno, nil
	}
	c := f.conn()
	a, err := c.Mkdir(ctx, client.RootIno, unlinkedDir, 0o700)
	if isErrno(err, syscall.EEXIST) {
		a, err = c.Lookup(ctx, client.RootIno, unlinkedDir)
	}
	if err != nil {
		return 0, err
	}
	o.dirIno = a.Ino
	return a.Ino, nil
}

// visible hides the hidden names from a's link count: an unlinked open
// file says nlink 0, as on any Linux filesystem.
func (f *FS) visible(a *proto.Attr) {
	o := f.open
	o.mu.Lock()
	n := len(o.hidden[a.Ino])
	o.mu.Unlock()
	a.Nlink -= uint32(min(n, int(a.Nlink)))
}

func isErrno(err error, e syscall.Errno) bool { return err != nil && errnoOf(err) == e }
