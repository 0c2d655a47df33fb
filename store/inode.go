package store

import (
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"ustore/engine"
	"ustore/journal"
)

// File types in Mode, as st_mode.
const (
	ModeType = 0o170000
	ModeDir  = 0o040000
	ModeFile = 0o100000
	ModeLink = 0o120000 // a symbolic link: its target is an inline extent at offset 0
	ModePerm = 0o7777
)

// Directory entry types, as d_type.
const (
	TypeFile = 8  // DT_REG
	TypeDir  = 4  // DT_DIR
	TypeLink = 10 // DT_LNK
)

// inode is an inode in memory: its item as the tree holds it (plus what
// buffered writes changed), its buffered data, and its locks.
//
// Lock order: Store.renameMu, then one victim's wbMu (an inode a namespace
// operation may delete), then inodes' mu in ascending ino order, then a
// transaction handle (engine Start), then extMu, then tree locks. Writeback
// holds wbMu across its data I/O and takes mu, extMu and then the handle
// only to map the written data.
//
// The handle is a lock too: Start waits while a commit waits for the
// running transaction's handles to end, so a handle holder must never wait
// for a lock whose holder may be waiting in Start. Hence every mutation
// takes its inode locks before its handle. extMu is the one lock taken
// under a handle, and that is safe: a writer takes extMu only with the
// inode's mu held, so no one waiting for it can be holding mu in Start,
// and readers hold it without ever starting a transaction.
type inode struct {
	ino  Ino
	dir  bool // a directory: fixed at creation
	link bool // a symbolic link: fixed at creation, as its target is
	// refs counts users; the table evicts only unreferenced, clean inodes
	// (guarded by the table shard's mutex).
	refs int
	// charge is what the inode cache charges the inode
	// (inode_charge.go): set under mu (or before the inode is shared),
	// read by the cache under its shard lock; 0 once the inode has left
	// the table.
	charge atomic.Int64

	// wbMu serialises writeback, truncate and deletion of this inode's
	// data: none may change its extent items while another does.
	wbMu sync.Mutex
	// extMu guards the extent items against readers: readers map and read
	// blocks under RLock, writeback and truncate change extents under Lock.
	extMu sync.RWMutex

	mu sync.Mutex
	// item is the inode as written to the tree, except that item.Size is
	// diskSize there: size is the size readers see, diskSize the size the
	// tree holds — it advances with writeback (ordered data: the tree never
	// says a file is longer than the data written for it) and with
	// truncate. Times and mode change here first and reach the tree with
	// the next item write.
	item     engine.InodeItem
	size     uint64
	diskSize uint64
	pages    pageState
	// epoch names the inode's blocks in the page cache (page_cache.go):
	// fresh when the inode is created, kept across its eviction from the
	// inode table (kept_epochs.go), replaced when all its
	// cached blocks must go at once. cacheSeq counts the changes that may
	// make a block read from the device stale before it is cached: new
	// dirty pages and epoch changes. All guarded by mu.
	epoch, cacheSeq uint64
	// The read-ahead window (read_ahead.go), guarded by mu: raNext is the
	// block after the sequential run's last read, raEnd the block after
	// what read-ahead has issued for it (0: nothing), raChunks how many
	// chunks it keeps ahead, raFlight its chunks in flight, scanReady a
	// scan's chunks read and held in the scan ring (scan_ring.go).
	raNext, raEnd uint64
	raChunks      int
	raFlight      []*raChunk
	scanReady     []*raChunk
	// nextIndex is a directory's next DIR_INDEX offset.
	nextIndex uint64
	// holds counts a file's Open holds (orphan.go); each holds one of
	// refs. A file whose last name goes while it has holds becomes an
	// orphan: nlink 0, not deleted, freed by the last Release. Guarded by
	// mu.
	holds int
	// deleted: the inode's last name is gone and its items are deleted.
	// Set under mu (once, never cleared); read under mu, or without a
	// lock by fsync's fast path.
	deleted atomic.Bool

	// buffered: the inode has buffered pages (it is in the dirty set).
	// Set and cleared under mu; read without a lock by fsync's fast path.
	buffered atomic.Bool

	// lastTrans is the transaction of the inode's last change in the tree
	// (btrfs: last_trans). fsync reads it without a lock.
	lastTrans atomicTransid

	// changes counts writeItem calls: every change to the inode's items
	// writes its item. loggedChanges is its value when the inode was last
	// logged, loggedGen the log generation it was logged in. fsync reads
	// all three without a lock (Store.inLog).
	changes, loggedChanges, loggedGen atomic.Uint64
}

// isDir and isLink read the file type, which never changes: no lock.
func (in *inode) isDir() bool  { return in.dir }
func (in *inode) isLink() bool { return in.link }

// newInodeOf returns the in-memory inode for item, its file type from the
// item's mode.
func newInodeOf(ino Ino, item engine.InodeItem) *inode {
	t := item.Mode & ModeType
	in := &inode{ino: ino, dir: t == ModeDir, link: t == ModeLink, item: item, size: item.Size, diskSize: item.Size}
	in.pages.init()
	return in
}

// regularOnly refuses an operation on a regular file's data (read,
// write, a change of size) on any other inode: a directory with EISDIR,
// as read(2) of one; a symbolic link with EINVAL — its bytes are its
// target, read with Readlink, and the store never follows it to a file.
func (in *inode) regularOnly() error {
	switch {
	case in.dir:
		return syscall.EISDIR
	case in.link:
		return syscall.EINVAL
	}
	return nil
}

func dtype(mode uint32) uint8 {
	switch mode & ModeType {
	case ModeDir:
		return TypeDir
	case ModeLink:
		return TypeLink
	}
	return TypeFile
}

func now() engine.Timespec {
	t := time.Now()
	return engine.Timespec{Sec: t.Unix(), Nsec: uint32(t.Nanosecond())}
}

// Attr is what stat returns.
type Attr struct {
	Ino        Ino
	Mode       uint32
	Nlink      uint32
	UID, GID   uint32
	Size       uint64
	Blocks     uint64          // bytes allocated on the device (and inline)
	Generation journal.Transid // the transaction that created the inode
	Atime      time.Time
	Mtime      time.Time
	Ctime      time.Time
	Btime      time.Time
}

// IsDir reports whether the inode is a directory.
func (a Attr) IsDir() bool { return a.Mode&ModeType == ModeDir }

// IsLink reports whether the inode is a symbolic link.
func (a Attr) IsLink() bool { return a.Mode&ModeType == ModeLink }

func ts(t engine.Timespec) time.Time { return time.Unix(t.Sec, int64(t.Nsec)) }

// attrLocked returns in's attributes; in.mu held.
func (in *inode) attrLocked() Attr {
	return Attr{
		Ino: in.ino, Mode: in.item.Mode, Nlink: in.item.Nlink, UID: in.item.UID, GID: in.item.GID,
		Size: in.size, Blocks: in.item.Nbytes, Generation: in.item.Generation,
		Atime: ts(in.item.Atime), Mtime: ts(in.item.Mtime), Ctime: ts(in.item.Ctime), Btime: ts(in.item.Otime),
	}
}

// atomicIno is an atomic.Uint64 that holds an inode number.
type atomicIno struct{ v atomic.Uint64 }

func (a *atomicIno) Load() Ino   { return Ino(a.v.Load()) }
func (a *atomicIno) Store(i Ino) { a.v.Store(uint64(i)) }

// take returns the number and advances it: the inode number a create gets.
func (a *atomicIno) take() Ino { return Ino(a.v.Add(1) - 1) }

// takeN takes n consecutive numbers at once and returns the first: a
// create batch's (create_batch.go).
func (a *atomicIno) takeN(n int) Ino { return Ino(a.v.Add(uint64(n)) - uint64(n)) }

// giveBack returns the numbers from first up to end, taken by takeN and
// not used, if none was taken since: a failed create of a batch leaves
// no gap then (otherwise a gap, which numbers never reused allow).
func (a *atomicIno) giveBack(first, end Ino) {
	if first != end {
		a.v.CompareAndSwap(uint64(end), uint64(first))
	}
}

// atomicTransid is an atomic.Uint64 that holds a transaction id.
type atomicTransid struct{ v atomic.Uint64 }

func (a *atomicTransid) Load() journal.Transid   { return journal.Transid(a.v.Load()) }
func (a *atomicTransid) Store(t journal.Transid) { a.v.Store(uint64(t)) }
