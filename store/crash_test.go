package store

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"ustore/dev/memdev"
)

// Crash consistency in the spirit of CrashMonkey/ACE (Mohan et al., OSDI
// 2018): workloads of 1–3 namespace and data operations on a small tree,
// each operation followed by a persistence point (fsync, fdatasync, fsync
// of a directory, sync). Every workload runs on a fresh memdev, recording
// after each persistence point what it made durable. Then power is cut at
// every flush and after every write between flushes (keeping all of the
// unflushed writes, a random subset, or tearing one), the store is mounted
// again, fsck must be clean, every file and directory must be readable, and
// every fact made durable by the last persistence point that had returned
// before the cut must hold.
//
// The oracle is the durability contract, not this implementation's (which
// commits everything on most fsyncs):
//
//   - fsync/fdatasync(file): the file's content and size; for a file created
//     by the workload, also its names;
//   - fsync(dir): the directory's entries (name → inode); for a directory
//     created by the workload, also its name;
//   - fsync(file or dir), not fdatasync: its extended attributes, the
//     whole set;
//   - sync: everything.
//
// The setup is synced, so every fact is durable as of the start. A fact
// durable as of persistence point g and changed by operations after it may
// show any value it had from g to the crash (operations that had not
// started by the crash point excluded): a name must be one of those values
// whole; a file must have one of those sizes, and its bytes must come from
// those versions (crashContentOK: a write may be lost while a truncate that
// followed survives, but no truncated byte may reappear).
//
// By default: every workload of one operation, a fixed sample of those of
// two, and a few random ones of three. USTORE_CRASH_FULL=1 runs every
// workload of two operations and 20,000 random ones of three
// (USTORE_CRASH_FULL=n: n of three). USTORE_CRASH_SEED=n draws another
// sample.

// The starting tree, synced before each workload:
//
//	/A    10,000 bytes (3 blocks, the last partial)
//	/B    100 bytes (inline)
//	/D/   directory
//	/D/C  5,000 bytes
//	/E/   empty directory
//
// /A and /D have the extended attribute user.a.
var crashSetup = []crashOp{
	{kind: opCreate, a: "/A"},
	{kind: opWrite, a: "/A", off: 0, n: 10000},
	{kind: opCreate, a: "/B"},
	{kind: opWrite, a: "/B", off: 0, n: 100},
	{kind: opMkdir, a: "/D"},
	{kind: opCreate, a: "/D/C"},
	{kind: opWrite, a: "/D/C", off: 0, n: 5000},
	{kind: opMkdir, a: "/E"},
	{kind: opSetXattr, a: "/A", b: "user.a"},
	{kind: opSetXattr, a: "/D", b: "user.a"},
}

// crashOps is the operation alphabet. An operation that is not valid in
// the state it would run in (its file missing, its name taken) is skipped
// by the generator.
var crashOps = []crashOp{
	{kind: opSetXattr, a: "/A", b: "user.b"},
	{kind: opSetXattr, a: "/A", b: "user.a"}, // replaces the setup's value
	{kind: opRemoveXattr, a: "/A", b: "user.a"},
	{kind: opSetXattr, a: "/D", b: "user.b"},
	{kind: opRemoveXattr, a: "/D", b: "user.a"},
	{kind: opSetXattr, a: "/n", b: "user.n"},
	{kind: opCreate, a: "/n"},
	{kind: opCreate, a: "/D/n"},
	{kind: opMkdir, a: "/F"},
	{kind: opMkdir, a: "/D/F"},
	{kind: opWrite, a: "/A", off: -1, n: 3000},    // append across a block boundary
	{kind: opWrite, a: "/A", off: 2000, n: 5000},  // overwrite blocks 0–1
	{kind: opWrite, a: "/A", off: 4096, n: 4096},  // overwrite block 1: its extent split in three
	{kind: opWrite, a: "/B", off: -1, n: 200},     // stays inline
	{kind: opWrite, a: "/B", off: -1, n: 6000},    // inline → extents
	{kind: opWrite, a: "/D/C", off: 4096, n: 100}, // overwrite inside the last block
	{kind: opWrite, a: "/n", off: 0, n: 5000},
	{kind: opWrite, a: "/D/n", off: -1, n: 100},
	{kind: opWrite, a: "/A", off: 30000, n: 1000}, // past the end: a hole
	{kind: opTruncate, a: "/A", n: 5000},
	{kind: opTruncate, a: "/A", n: 20000},
	{kind: opTruncate, a: "/B", n: 0},
	{kind: opTruncate, a: "/D/C", n: 4096},
	{kind: opLink, a: "/A", b: "/D/l"},
	{kind: opLink, a: "/D/C", b: "/l"},
	{kind: opLink, a: "/n", b: "/E/n"},
	{kind: opUnlink, a: "/A"},
	{kind: opUnlink, a: "/D/C"},
	{kind: opUnlink, a: "/n"},
	{kind: opUnlink, a: "/D/l"},
	{kind: opRename, a: "/A", b: "/D/A2"},
	{kind: opRename, a: "/B", b: "/A"},
	{kind: opRename, a: "/D/C", b: "/D/C2"},
	{kind: opRename, a: "/D", b: "/E/D"},
	{kind: opRename, a: "/n", b: "/B"},
	{kind: opRename, a: "/D/n", b: "/n"},
	{kind: opRename, a: "/F", b: "/E"},
	{kind: opRmdir, a: "/E"},
	{kind: opRmdir, a: "/F"},
	{kind: opRmdir, a: "/D/F"},
	// After a link: the other name.
	{kind: opWrite, a: "/D/l", off: 0, n: 100},
	{kind: opUnlink, a: "/l"},
	{kind: opRename, a: "/D/l", b: "/B"},
	// After a create: shrink a new file; and one more replace.
	{kind: opTruncate, a: "/n", n: 100},
	{kind: opRename, a: "/A", b: "/D/C"},
	// Open files: a hold, the unlink or rename that makes an orphan of
	// it (above), writes to it by number, and its release.
	{kind: opOpen, a: "/A"},
	{kind: opOpen, a: "/D/C"},
	{kind: opWriteHeld, a: "/A", off: -1, n: 5000},
	{kind: opRelease, a: "/A"},
	{kind: opRelease, a: "/D/C"},
	// Symbolic links: to a file, dangling, the longest target at the
	// test's 4 KiB nodes, in a new directory; then renamed (over a file),
	// hard linked and unlinked as files are.
	{kind: opSymlink, a: "/s", b: "A"},
	{kind: opSymlink, a: "/E/s", b: "../no/such/file"},
	{kind: opSymlink, a: "/D/s", b: crashLongTarget},
	{kind: opSymlink, a: "/F/s", b: "/D"},
	{kind: opRename, a: "/s", b: "/D/C"},
	{kind: opLink, a: "/s", b: "/E/s2"},
	{kind: opUnlink, a: "/s"},
	// renameat2's flags: to a free name (and refused over a taken one,
	// which the generator skips); exchanges of two files, of a file and a
	// directory, across directories.
	{kind: opRenameNoReplace, a: "/A", b: "/E/A"},
	{kind: opRenameNoReplace, a: "/D", b: "/E/D"},
	{kind: opExchange, a: "/A", b: "/B"},
	{kind: opExchange, a: "/A", b: "/D"},
	{kind: opExchange, a: "/D/C", b: "/E"},
	// fallocate: grow with zero blocks past a partial last block, an
	// inline file to extents, inside the file (holes filled, nothing
	// visible); punch two partial edges and a whole block, and a whole
	// file's blocks.
	{kind: opFallocate, a: "/A", off: 8000, n: 20000},
	{kind: opFallocate, a: "/B", off: 0, n: 9000},
	{kind: opFallocate, a: "/D/C", off: 0, n: 4096},
	{kind: opPunch, a: "/A", off: 100, n: 8192},
	{kind: opPunch, a: "/D/C", off: 0, n: 8192},
}

// crashOrphanWorkloads run in every mode: files unlinked or renamed over
// while open, written and fsynced as orphans, and released.
var crashOrphanWorkloads = []crashWorkload{
	{{crashOp{kind: opOpen, a: "/A"}, crashPP{kind: ppSync}},
		{crashOp{kind: opUnlink, a: "/A"}, crashPP{ppFsyncDir, "/"}},
		{crashOp{kind: opWriteHeld, a: "/A", off: -1, n: 5000}, crashPP{ppFsyncHeld, "/A"}},
		{crashOp{kind: opRelease, a: "/A"}, crashPP{ppFsync, "/D/C"}}},
	{{crashOp{kind: opOpen, a: "/A"}, crashPP{ppFsync, "/D/C"}},
		{crashOp{kind: opRename, a: "/B", b: "/A"}, crashPP{ppFsync, "/A"}},
		{crashOp{kind: opRelease, a: "/A"}, crashPP{kind: ppSync}}},
	{{crashOp{kind: opOpen, a: "/D/C"}, crashPP{ppFsyncDir, "/E"}},
		{crashOp{kind: opUnlink, a: "/D/C"}, crashPP{ppFsyncHeld, "/D/C"}},
		{crashOp{kind: opRelease, a: "/D/C"}, crashPP{ppFsyncDir, "/D"}}},
	{{crashOp{kind: opOpen, a: "/A"}, crashPP{ppFsync, "/A"}},
		{crashOp{kind: opLink, a: "/A", b: "/D/l"}, crashPP{ppFsync, "/D/l"}},
		{crashOp{kind: opUnlink, a: "/A"}, crashPP{ppFsyncDir, "/"}},
		{crashOp{kind: opUnlink, a: "/D/l"}, crashPP{ppFsyncHeld, "/A"}},
		{crashOp{kind: opRelease, a: "/A"}, crashPP{kind: ppSync}}},
	// Released while still named: nothing is freed.
	{{crashOp{kind: opOpen, a: "/D/C"}, crashPP{kind: ppSync}},
		{crashOp{kind: opRelease, a: "/D/C"}, crashPP{ppFsync, "/D/C"}}},
	// An orphan with attributes, allocated blocks and a punched hole: its
	// XATTR_ITEMs and extents go with it, at its release or at the mount
	// after a cut (the features of one file, freed together).
	{{crashOp{kind: opSetXattr, a: "/A", b: "user.b"}, crashPP{ppFsync, "/A"}},
		{crashOp{kind: opFallocate, a: "/A", off: 0, n: 20000}, crashPP{ppFsync, "/A"}},
		{crashOp{kind: opPunch, a: "/A", off: 4096, n: 8192}, crashPP{kind: ppSync}},
		{crashOp{kind: opOpen, a: "/A"}, crashPP{ppFsync, "/D/C"}},
		{crashOp{kind: opUnlink, a: "/A"}, crashPP{ppFsyncHeld, "/A"}},
		{crashOp{kind: opRelease, a: "/A"}, crashPP{ppFsyncDir, "/"}}},
	// A symbolic link exchanged with a file, and the file's orphan.
	{{crashOp{kind: opSymlink, a: "/s", b: "A"}, crashPP{ppFsyncDir, "/"}},
		{crashOp{kind: opOpen, a: "/B"}, crashPP{kind: ppSync}},
		{crashOp{kind: opExchange, a: "/s", b: "/B"}, crashPP{ppFsync, "/s"}},
		{crashOp{kind: opUnlink, a: "/s"}, crashPP{ppFsyncHeld, "/B"}},
		{crashOp{kind: opRelease, a: "/B"}, crashPP{kind: ppSync}}},
}

// crashLongTarget is the longest symbolic link target at 4 KiB nodes
// (store.SymlinkTargetMax).
var crashLongTarget = strings.Repeat("t/", 482) + "x"

// crashRegressions run in every mode: workloads that found bugs.
var crashRegressions = []crashWorkload{
	// A truncate that grew a file whose last block the device held past
	// the end (a shrink leaves it) reached the tree with the next commit,
	// the zeroed tail page still unwritten: the bytes the shrink cut off
	// came back. fsync /D/C commits nothing; fsync /n commits all.
	{{crashOp{kind: opTruncate, a: "/A", n: 5000}, crashPP{kind: ppSync}},
		{crashOp{kind: opTruncate, a: "/A", n: 20000}, crashPP{ppFsync, "/D/C"}},
		{crashOp{kind: opCreate, a: "/n"}, crashPP{ppFsync, "/n"}}},
	// The same with the shrink not durable either.
	{{crashOp{kind: opTruncate, a: "/A", n: 5000}, crashPP{ppFsyncDir, "/E"}},
		{crashOp{kind: opTruncate, a: "/A", n: 20000}, crashPP{ppFsync, "/D/C"}},
		{crashOp{kind: opCreate, a: "/n"}, crashPP{ppFsync, "/n"}}},
	// The log of / said "A is gone"; replay took the file for an orphan
	// and deleted it, though its link /D/l (not durable, but the file
	// was never deleted in any state) kept it alive: a directory's log
	// must carry the names of the inodes it lost entries of.
	{{crashOp{kind: opLink, a: "/A", b: "/D/l"}, crashPP{ppFsync, "/D/C"}},
		{crashOp{kind: opUnlink, a: "/A"}, crashPP{ppFsyncDir, "/"}}},
	// A create writes its inode item, INODE_REF (and a link's target) as
	// one batch; a remove of a name whose DIR_ITEM holds it alone deletes
	// that item without reading it, and a last name's INODE_REF goes with
	// the inode's range, not on its own (removeName). Names that share
	// their INODE_REF (two links in one directory), a file's last name in
	// another directory, an empty directory's rmdir, a symbolic link.
	{{crashOp{kind: opLink, a: "/A", b: "/l"}, crashPP{ppFsync, "/A"}},
		{crashOp{kind: opUnlink, a: "/l"}, crashPP{ppFsyncDir, "/"}},
		{crashOp{kind: opUnlink, a: "/A"}, crashPP{kind: ppSync}}},
	{{crashOp{kind: opCreate, a: "/n"}, crashPP{ppFsync, "/n"}},
		{crashOp{kind: opLink, a: "/n", b: "/D/m"}, crashPP{ppFsyncDir, "/D"}},
		{crashOp{kind: opUnlink, a: "/n"}, crashPP{ppFsyncDir, "/"}},
		{crashOp{kind: opUnlink, a: "/D/m"}, crashPP{ppFsyncDir, "/D"}}},
	{{crashOp{kind: opMkdir, a: "/N"}, crashPP{ppFsyncDir, "/"}},
		{crashOp{kind: opCreate, a: "/N/f"}, crashPP{ppFsync, "/N/f"}},
		{crashOp{kind: opUnlink, a: "/N/f"}, crashPP{ppFsyncDir, "/N"}},
		{crashOp{kind: opRmdir, a: "/N"}, crashPP{ppFsyncDir, "/"}}},
	{{crashOp{kind: opSymlink, a: "/s", b: "/D/C"}, crashPP{ppFsyncDir, "/"}},
		{crashOp{kind: opUnlink, a: "/s"}, crashPP{kind: ppSync}},
		{crashOp{kind: opCreate, a: "/s"}, crashPP{ppFsync, "/s"}}},
	// Renames to free names, as the server's connection reader makes
	// them (RenameNoWait on even steps: the first and the third), in one
	// directory and to another, each followed by an fsync that logs it.
	{{crashOp{kind: opRename, a: "/A", b: "/A2"}, crashPP{ppFsync, "/A2"}},
		{crashOp{kind: opRename, a: "/A2", b: "/A3"}, crashPP{ppFsyncDir, "/"}},
		{crashOp{kind: opRename, a: "/A3", b: "/D/A"}, crashPP{ppFsync, "/D/A"}},
		{crashOp{kind: opRenameNoReplace, a: "/B", b: "/B2"}, crashPP{ppFsyncDir, "/"}},
		{crashOp{kind: opRenameNoReplace, a: "/D/C", b: "/C"}, crashPP{ppFsync, "/C"}}},
}

// ---- the model ----

type crashNode struct {
	dir    bool
	link   bool              // a symbolic link: data is its target
	data   []byte            // a file's content; replaced, never changed in place
	ents   map[string]Ino    // a directory's entries
	xattrs map[string]string // extended attributes; replaced, never changed in place
	// heldAs: the path a file was opened by (opOpen), "" if it has no
	// hold. A held file keeps its node when its last name goes (an
	// orphan: no name leads to it) until its release.
	heldAs string
}

// crashModel is the namespace and content: inode → node.
type crashModel map[Ino]*crashNode

func (m crashModel) clone() crashModel {
	c := make(crashModel, len(m))
	for ino, n := range m {
		cn := *n
		if n.dir {
			cn.ents = maps.Clone(n.ents)
		}
		c[ino] = &cn
	}
	return c
}

func splitPath(p string) (parent, name string) {
	i := strings.LastIndexByte(p, '/')
	return p[:i], p[i+1:]
}

func (m crashModel) lookup(p string) (Ino, bool) {
	ino := RootIno
	for _, name := range strings.Split(p, "/") {
		if name == "" {
			continue
		}
		n := m[ino]
		if n == nil || !n.dir {
			return 0, false
		}
		c, ok := n.ents[name]
		if !ok {
			return 0, false
		}
		ino = c
	}
	return ino, true
}

// parentDir returns the directory that holds p's last component.
func (m crashModel) parentDir(p string) (Ino, string, bool) {
	dp, name := splitPath(p)
	d, ok := m.lookup(dp)
	if !ok || !m[d].dir {
		return 0, "", false
	}
	return d, name, true
}

func (m crashModel) isFile(p string) bool {
	ino, ok := m.lookup(p)
	return ok && !m[ino].dir && !m[ino].link
}

func (m crashModel) isLink(p string) bool {
	ino, ok := m.lookup(p)
	return ok && m[ino].link
}

func (m crashModel) isDir(p string) bool {
	ino, ok := m.lookup(p)
	return ok && m[ino].dir
}

// entry returns what name in dir points at (0: nothing, or no such dir).
func (m crashModel) entry(dir Ino, name string) Ino {
	n := m[dir]
	if n == nil || !n.dir {
		return 0
	}
	return n.ents[name]
}

// held returns the file held as label p.
func (m crashModel) held(p string) (Ino, bool) {
	for ino, n := range m {
		if n.heldAs == p {
			return ino, true
		}
	}
	return 0, false
}

// named reports whether node ino is one a walk from the root finds: a
// directory, or a file with a name (not an orphan).
func (m crashModel) named(ino Ino) bool {
	n := m[ino]
	return n != nil && (n.dir || m.links(ino) > 0)
}

func (m crashModel) links(ino Ino) int {
	k := 0
	for _, n := range m {
		for _, c := range n.ents {
			if c == ino {
				k++
			}
		}
	}
	return k
}

// namesOf returns the entries that point at ino.
func (m crashModel) namesOf(ino Ino) []crashEntry {
	var out []crashEntry
	for d, n := range m {
		for name, c := range n.ents {
			if c == ino {
				out = append(out, crashEntry{d, name})
			}
		}
	}
	return out
}

type crashEntry struct {
	dir  Ino
	name string
}

// ---- operations ----

type crashOpKind uint8

const (
	opCreate crashOpKind = iota
	opMkdir
	opWrite
	opTruncate
	opLink
	opUnlink
	opRename
	opRmdir
	opOpen      // a hold on the file at a, labelled a
	opRelease   // release the hold labelled a
	opWriteHeld // a write to the file held as a, named or not
	opSymlink
	opRenameNoReplace
	opExchange
	opFallocate   // mode 0: allocate, growing the file
	opPunch       // PUNCH_HOLE|KEEP_SIZE
	opSetXattr    // attribute b of a, set to a value of the step
	opRemoveXattr // attribute b of a
	opCreateBatch // n files b0, b1, … in directory a, concurrently: one pass of its create queue (crash_batch_test.go)
)

type crashOp struct {
	kind crashOpKind
	a, b string // opSymlink: the link, its target
	off  int    // opWrite: offset, -1 to append; opFallocate, opPunch: offset
	n    int    // opWrite, opFallocate, opPunch: length; opTruncate: the size
}

func (o crashOp) String() string {
	switch o.kind {
	case opCreate:
		return "create " + o.a
	case opMkdir:
		return "mkdir " + o.a
	case opWrite:
		if o.off < 0 {
			return fmt.Sprintf("append %s +%d", o.a, o.n)
		}
		return fmt.Sprintf("write %s %d+%d", o.a, o.off, o.n)
	case opTruncate:
		return fmt.Sprintf("truncate %s %d", o.a, o.n)
	case opLink:
		return "link " + o.a + " " + o.b
	case opUnlink:
		return "unlink " + o.a
	case opRename:
		return "rename " + o.a + " " + o.b
	case opRmdir:
		return "rmdir " + o.a
	case opOpen:
		return "open " + o.a
	case opRelease:
		return "release " + o.a
	case opWriteHeld:
		return fmt.Sprintf("write-held %s +%d", o.a, o.n)
	case opSymlink:
		return fmt.Sprintf("symlink %s (%d bytes)", o.a, len(o.b))
	case opRenameNoReplace:
		return "rename-noreplace " + o.a + " " + o.b
	case opExchange:
		return "exchange " + o.a + " " + o.b
	case opFallocate:
		return fmt.Sprintf("fallocate %s %d+%d", o.a, o.off, o.n)
	case opPunch:
		return fmt.Sprintf("punch %s %d+%d", o.a, o.off, o.n)
	case opSetXattr:
		return "setxattr " + o.a + " " + o.b
	case opRemoveXattr:
		return "removexattr " + o.a + " " + o.b
	case opCreateBatch:
		return fmt.Sprintf("create-batch %s %s0..%d", o.a, o.b, o.n-1)
	}
	return "?"
}

// crashData is what write number step writes at file offset off: every
// byte depends on both, and none is zero, so that a lost or misplaced
// block shows.
func crashData(step, off, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		x := uint32(step+1)*2654435761 ^ uint32(off+i)*40503 ^ uint32((off+i)/blockSize)*97
		b[i] = byte(x>>11) | 1
	}
	return b
}

var errCrashInvalid = errors.New("operation not valid here")

// resolved is an operation with its inodes found in the model before it
// runs.
type resolved struct {
	ino        Ino // the file (write, truncate, link)
	dir        Ino
	dir2       Ino
	name, nam2 string
	off        int
	data       []byte
}

// resolve checks op against m (POSIX's rules, as the store applies them)
// and finds what it works on.
func (m crashModel) resolve(op crashOp, step int) (resolved, error) {
	var r resolved
	var ok bool
	switch op.kind {
	case opCreate, opMkdir, opSymlink:
		if r.dir, r.name, ok = m.parentDir(op.a); !ok || m.entry(r.dir, r.name) != 0 {
			return r, errCrashInvalid
		}
	case opCreateBatch:
		if !m.isDir(op.a) {
			return r, errCrashInvalid
		}
		r.dir, _ = m.lookup(op.a)
		for _, name := range op.batchNames() {
			if m.entry(r.dir, name) != 0 {
				return r, errCrashInvalid
			}
		}
	case opWrite, opTruncate, opWriteHeld, opFallocate, opPunch:
		if op.kind == opWriteHeld {
			if r.ino, ok = m.held(op.a); !ok {
				return r, errCrashInvalid
			}
		} else if !m.isFile(op.a) {
			return r, errCrashInvalid
		} else {
			r.ino, _ = m.lookup(op.a)
		}
		r.off = op.off
		if op.kind == opWrite || op.kind == opWriteHeld {
			r.off = op.off
			if r.off < 0 {
				r.off = len(m[r.ino].data)
			}
			r.data = crashData(step, r.off, op.n)
		}
	case opOpen:
		if !m.isFile(op.a) {
			return r, errCrashInvalid
		}
		r.ino, _ = m.lookup(op.a)
		if _, taken := m.held(op.a); taken || m[r.ino].heldAs != "" {
			return r, errCrashInvalid
		}
	case opRelease:
		if r.ino, ok = m.held(op.a); !ok {
			return r, errCrashInvalid
		}
	case opLink:
		if !m.isFile(op.a) && !m.isLink(op.a) {
			return r, errCrashInvalid
		}
		r.ino, _ = m.lookup(op.a)
		if r.dir2, r.nam2, ok = m.parentDir(op.b); !ok || m.entry(r.dir2, r.nam2) != 0 {
			return r, errCrashInvalid
		}
	case opUnlink, opRmdir:
		if op.kind == opUnlink && !m.isFile(op.a) && !m.isLink(op.a) || op.kind == opRmdir && !m.isDir(op.a) {
			return r, errCrashInvalid
		}
		r.dir, r.name, _ = m.parentDir(op.a)
		if op.kind == opRmdir && len(m[m.entry(r.dir, r.name)].ents) != 0 {
			return r, errCrashInvalid
		}
	case opRenameNoReplace:
		src, ok := m.lookup(op.a)
		if !ok || src == RootIno {
			return r, errCrashInvalid
		}
		r.dir, r.name, _ = m.parentDir(op.a)
		if r.dir2, r.nam2, ok = m.parentDir(op.b); !ok || m.entry(r.dir2, r.nam2) != 0 {
			return r, errCrashInvalid
		}
		if m[src].dir && strings.HasPrefix(op.b+"/", op.a+"/") {
			return r, errCrashInvalid
		}
	case opExchange:
		src, ok := m.lookup(op.a)
		dst, ok2 := m.lookup(op.b)
		if !ok || !ok2 || src == RootIno || dst == RootIno || src == dst {
			return r, errCrashInvalid
		}
		if m[src].dir && strings.HasPrefix(op.b+"/", op.a+"/") || m[dst].dir && strings.HasPrefix(op.a+"/", op.b+"/") {
			return r, errCrashInvalid
		}
		r.dir, r.name, _ = m.parentDir(op.a)
		r.dir2, r.nam2, _ = m.parentDir(op.b)
	case opSetXattr, opRemoveXattr:
		if r.ino, ok = m.lookup(op.a); !ok || m[r.ino].link {
			// A symbolic link has no user.* attributes (EPERM).
			return r, errCrashInvalid
		}
		if _, has := m[r.ino].xattrs[op.b]; op.kind == opRemoveXattr && !has {
			return r, errCrashInvalid
		}
		r.data = fmt.Appendf(nil, "v%d", step)
	case opRename:
		src, ok := m.lookup(op.a)
		if !ok || src == RootIno {
			return r, errCrashInvalid
		}
		r.dir, r.name, _ = m.parentDir(op.a)
		if r.dir2, r.nam2, ok = m.parentDir(op.b); !ok {
			return r, errCrashInvalid
		}
		if m[src].dir && strings.HasPrefix(op.b+"/", op.a+"/") {
			return r, errCrashInvalid
		}
		if v := m.entry(r.dir2, r.nam2); v != 0 && v != src {
			switch {
			case m[src].dir != m[v].dir:
				return r, errCrashInvalid
			case m[v].dir && len(m[v].ents) != 0:
				return r, errCrashInvalid
			}
		}
	}
	return r, nil
}

// apply changes m as op (resolved to r) does; newIno is the inode a create
// or mkdir made.
func (m crashModel) apply(op crashOp, r resolved, newIno Ino) {
	drop := func(ino Ino) {
		if m.links(ino) == 0 && m[ino].heldAs == "" {
			delete(m, ino)
		}
	}
	switch op.kind {
	case opCreate, opMkdir, opSymlink:
		n := &crashNode{dir: op.kind == opMkdir}
		if n.dir {
			n.ents = map[string]Ino{}
		}
		if op.kind == opSymlink {
			n.link, n.data = true, []byte(op.b)
		}
		m[newIno] = n
		m[r.dir].ents[r.name] = newIno
	case opCreateBatch:
		// One pass: consecutive numbers (crashExecBatch checks).
		for i, name := range op.batchNames() {
			m[newIno+Ino(i)] = &crashNode{}
			m[r.dir].ents[name] = newIno + Ino(i)
		}
	case opOpen:
		m[r.ino].heldAs = op.a
	case opRelease:
		m[r.ino].heldAs = ""
		drop(r.ino)
	case opWrite, opWriteHeld:
		f := m[r.ino]
		d := make([]byte, max(len(f.data), r.off+len(r.data)))
		copy(d, f.data)
		copy(d[r.off:], r.data)
		f.data = d
	case opTruncate:
		f := m[r.ino]
		d := make([]byte, op.n)
		copy(d, f.data)
		f.data = d
	case opFallocate:
		f := m[r.ino]
		d := make([]byte, max(len(f.data), op.off+op.n))
		copy(d, f.data)
		f.data = d
	case opPunch:
		f := m[r.ino]
		d := slices.Clone(f.data)
		if op.off < len(d) {
			clear(d[op.off:min(op.off+op.n, len(d))])
		}
		f.data = d
	case opRenameNoReplace:
		src := m[r.dir].ents[r.name]
		delete(m[r.dir].ents, r.name)
		m[r.dir2].ents[r.nam2] = src
	case opExchange:
		src, dst := m[r.dir].ents[r.name], m[r.dir2].ents[r.nam2]
		m[r.dir].ents[r.name], m[r.dir2].ents[r.nam2] = dst, src
	case opLink:
		m[r.dir2].ents[r.nam2] = r.ino
	case opSetXattr, opRemoveXattr:
		n := m[r.ino]
		n.xattrs = maps.Clone(n.xattrs)
		if n.xattrs == nil {
			n.xattrs = map[string]string{}
		}
		if op.kind == opSetXattr {
			n.xattrs[op.b] = string(r.data)
		} else {
			delete(n.xattrs, op.b)
		}
	case opUnlink, opRmdir:
		ino := m[r.dir].ents[r.name]
		delete(m[r.dir].ents, r.name)
		drop(ino)
	case opRename:
		src := m[r.dir].ents[r.name]
		victim := m.entry(r.dir2, r.nam2)
		if victim == src {
			return
		}
		delete(m[r.dir].ents, r.name)
		m[r.dir2].ents[r.nam2] = src
		if victim != 0 {
			drop(victim)
		}
	}
}

// targets are the paths an operation touched, as they are after it: the
// files and directories a persistence point after it may name.
func (op crashOp) targets(m crashModel) (files, dirs []string) {
	parent := func(p string) string {
		d, _ := splitPath(p)
		if d == "" {
			return "/"
		}
		return d
	}
	switch op.kind {
	case opCreate, opSymlink:
		return []string{op.a}, []string{parent(op.a)}
	case opCreateBatch:
		for _, name := range op.batchNames() {
			files = append(files, strings.TrimSuffix(op.a, "/")+"/"+name)
		}
		return files, []string{op.a}
	case opMkdir:
		return nil, []string{op.a, parent(op.a)}
	case opWrite, opTruncate, opFallocate, opPunch:
		return []string{op.a}, nil
	case opOpen, opRelease, opWriteHeld:
		// Nothing a named persistence point reaches (crashPPs offers an
		// orphan's own fsync).
		return nil, nil
	case opSetXattr, opRemoveXattr:
		if m.isDir(op.a) {
			return nil, []string{op.a}
		}
		return []string{op.a}, nil
	case opLink:
		return []string{op.b}, []string{parent(op.b)}
	case opUnlink, opRmdir:
		return nil, []string{parent(op.a)}
	case opExchange:
		dirs = []string{parent(op.a), parent(op.b)}
		for _, p := range []string{op.a, op.b} {
			if m.isDir(p) {
				dirs = append(dirs, p)
			} else {
				files = append(files, p)
			}
		}
		return files, dirs
	case opRename, opRenameNoReplace:
		dirs = []string{parent(op.a), parent(op.b)}
		if m.isDir(op.b) {
			dirs = append(dirs, op.b)
		} else {
			files = []string{op.b}
		}
		return files, dirs
	}
	return nil, nil
}

// ---- persistence points and workloads ----

type crashPPKind uint8

const (
	ppSync crashPPKind = iota
	ppFsync
	ppFdatasync
	ppFsyncDir
	ppFsyncHeld // fsync of the file held as path, named or not
)

type crashPP struct {
	kind crashPPKind
	path string
}

func (p crashPP) String() string {
	switch p.kind {
	case ppFsync:
		return "fsync " + p.path
	case ppFdatasync:
		return "fdatasync " + p.path
	case ppFsyncDir:
		return "fsync-dir " + p.path
	case ppFsyncHeld:
		return "fsync-held " + p.path
	}
	return "sync"
}

type crashStep struct {
	op crashOp
	pp crashPP
}

type crashWorkload []crashStep

func (w crashWorkload) String() string {
	s := make([]string, len(w))
	for i, st := range w {
		s[i] = st.op.String() + "; " + st.pp.String()
	}
	return strings.Join(s, " | ")
}

// crashPPs lists the persistence points that may follow the operations
// ops (the last just applied to m): sync, and fsync, fdatasync or
// fsync-dir of any file or directory one of them touched that still
// exists, or of /D/C or /E, which few operations touch (an fsync that
// finds its inode's last change committed commits nothing: what the
// workload changed stays in the running transaction, its data buffered).
func crashPPs(m crashModel, ops []crashOp) []crashPP {
	pps := []crashPP{{kind: ppSync}}
	seen := map[string]bool{}
	add := func(files, dirs []string) {
		for _, f := range files {
			if !seen[f] && (m.isFile(f) || m.isLink(f)) {
				seen[f] = true
				pps = append(pps, crashPP{ppFsync, f}, crashPP{ppFdatasync, f})
			}
		}
		for _, d := range dirs {
			if !seen[d] && m.isDir(d) {
				seen[d] = true
				pps = append(pps, crashPP{ppFsyncDir, d})
			}
		}
	}
	for _, op := range ops {
		add(op.targets(m))
		if _, ok := m.held(op.a); ok && op.kind == opOpen && !seen["held "+op.a] {
			seen["held "+op.a] = true
			pps = append(pps, crashPP{ppFsyncHeld, op.a})
		}
	}
	add([]string{"/D/C"}, []string{"/E"})
	return pps
}

// crashEnumerate calls visit with every workload of exactly n steps from m,
// in a fixed order.
func crashEnumerate(m crashModel, n int, visit func(crashWorkload)) {
	var rec func(m crashModel, w crashWorkload, ops []crashOp)
	next := Ino(1 << 40) // inode numbers for the generator's model
	rec = func(m crashModel, w crashWorkload, ops []crashOp) {
		if len(w) == n {
			visit(slices.Clone(w))
			return
		}
		for _, op := range crashOps {
			r, err := m.resolve(op, len(w))
			if err != nil {
				continue
			}
			m2 := m.clone()
			next++
			m2.apply(op, r, next)
			ops2 := append(slices.Clone(ops), op)
			for _, pp := range crashPPs(m2, ops2) {
				rec(m2, append(w, crashStep{op, pp}), ops2)
			}
		}
	}
	rec(m, nil, nil)
}

// crashRandom returns a random workload of n steps from m.
func crashRandom(rng *rand.Rand, m crashModel, n int) crashWorkload {
	m = m.clone()
	var w crashWorkload
	var ops []crashOp
	next := Ino(1 << 40)
	for len(w) < n {
		op := crashOps[rng.IntN(len(crashOps))]
		r, err := m.resolve(op, len(w))
		if err != nil {
			continue
		}
		next++
		m.apply(op, r, next)
		ops = append(ops, op)
		pps := crashPPs(m, ops)
		w = append(w, crashStep{op, pps[rng.IntN(len(pps))]})
	}
	return w
}

// ---- running a workload ----

// crashGuar is what the persistence points so far made durable: for each
// fact, the index of the last one that covered it (0: the setup's sync).
type crashGuar struct {
	sync   int
	file   map[Ino]int
	dir    map[Ino]int
	entry  map[crashEntry]int
	xattrs map[Ino]int // an inode's extended attributes: fsync, not fdatasync
}

func (g crashGuar) clone() crashGuar {
	return crashGuar{sync: g.sync, file: maps.Clone(g.file), dir: maps.Clone(g.dir), entry: maps.Clone(g.entry), xattrs: maps.Clone(g.xattrs)}
}

// crashRun is a workload run and its record: states[i] is the model after
// step i (states[0] the setup), opStart[i] the device's Seq when step i's
// operation began, ppDone[i] its Seq when step i's persistence point
// returned, guar[i] what was durable then.
type crashRun struct {
	w          crashWorkload
	d          *memdev.Device
	start, end uint64
	states     []crashModel
	opStart    []uint64
	ppDone     []uint64
	guar       []crashGuar
}

func crashOptions() Options {
	// No periodic commit and no background writeback: the workload's
	// device history is the same on every run, and only its persistence
	// points commit.
	return Options{Logger: testLogger, CommitInterval: 5 * time.Minute, DirtyExpire: time.Hour}
}

// crashOptionsNodes is crashOptions with every log sync a checkpoint —
// the log tree's nodes written beside its record, no delta records
// (journal.Ablations.LogNodesEverySync) — for the cases about log nodes
// on the device.
func crashOptionsNodes() Options {
	o := crashOptions()
	o.Ablations.LogNodesEverySync = true
	return o
}

// asReader makes an operation on even steps as the server's connection
// reader does — the NoWait call first, the waiting one where it declines —
// and on odd steps as a worker does: the waiting call alone.
func asReader(step int, noWait, wait func() error) error {
	if step%2 == 0 {
		if err := noWait(); !errors.Is(err, ErrWouldWait) {
			return err
		}
	}
	return wait()
}

// renameNoWaitLookedUp is a rename as a FUSE mount sends it to the server:
// the kernel has looked the source up and holds both directories, so their
// inodes are in memory, and the server's reader tries RenameNoWait. (A
// store reopened after a cut has only what replay loaded: without the
// lookups nearly every rename would decline for an inode not in memory.)
func renameNoWaitLookedUp(s *Store, r resolved, flags uint32) error {
	_, _ = s.Lookup(r.dir, r.name)
	_, _ = s.Stat(r.dir)
	_, _ = s.Stat(r.dir2)
	return s.RenameNoWait(r.dir, r.name, r.dir2, r.nam2, flags)
}

// crashExec runs op (resolved against m) on s and applies it to m.
func crashExec(s *Store, m crashModel, op crashOp, step int) error {
	r, err := m.resolve(op, step)
	if err != nil {
		return fmt.Errorf("%v: %w", op, err)
	}
	var newIno Ino
	switch op.kind {
	case opCreate:
		var a Attr
		err = asReader(step,
			func() (err error) { a, err = s.CreateNoWait(r.dir, r.name, 0o644); return err },
			func() (err error) { a, err = s.Create(r.dir, r.name, 0o644); return err })
		newIno = a.Ino
	case opSymlink:
		var a Attr
		a, err = s.Symlink(r.dir, r.name, op.b)
		newIno = a.Ino
	case opMkdir:
		var a Attr
		err = asReader(step,
			func() (err error) { a, err = s.MkdirNoWait(r.dir, r.name, 0o755); return err },
			func() (err error) { a, err = s.Mkdir(r.dir, r.name, 0o755); return err })
		newIno = a.Ino
	case opWrite, opWriteHeld:
		var n int
		n, err = s.Write(r.ino, uint64(r.off), r.data)
		if err == nil && n != len(r.data) {
			err = fmt.Errorf("short write %d", n)
		}
	case opOpen:
		_, err = s.Open(r.ino)
	case opRelease:
		err = s.Release(r.ino)
	case opTruncate:
		err = s.Truncate(r.ino, uint64(op.n))
	case opLink:
		_, err = s.Link(r.ino, r.dir2, r.nam2)
	case opUnlink:
		err = asReader(step,
			func() error { return s.UnlinkNoWait(r.dir, r.name) },
			func() error { return s.Unlink(r.dir, r.name) })
	case opRmdir:
		err = asReader(step,
			func() error {
				_, _ = s.Lookup(r.dir, r.name) // as a FUSE mount looks it up first
				return s.RmdirNoWait(r.dir, r.name)
			},
			func() error { return s.Rmdir(r.dir, r.name) })
	case opRename:
		err = asReader(step,
			func() error { return renameNoWaitLookedUp(s, r, 0) },
			func() error { return s.Rename(r.dir, r.name, r.dir2, r.nam2) })
	case opRenameNoReplace:
		err = asReader(step,
			func() error { return renameNoWaitLookedUp(s, r, RenameNoReplace) },
			func() error { return s.Rename2(r.dir, r.name, r.dir2, r.nam2, RenameNoReplace) })
	case opExchange:
		err = s.Rename2(r.dir, r.name, r.dir2, r.nam2, RenameExchange)
	case opFallocate:
		_, err = s.Fallocate(r.ino, 0, int64(op.off), int64(op.n))
	case opPunch:
		_, err = s.Fallocate(r.ino, FallocPunchHole|FallocKeepSize, int64(op.off), int64(op.n))
	case opSetXattr:
		err = s.SetXattr(r.ino, op.b, r.data, 0)
	case opRemoveXattr:
		err = s.RemoveXattr(r.ino, op.b)
	case opCreateBatch:
		newIno, err = crashExecBatch(s, r.dir, op.batchNames())
	}
	if err != nil {
		return fmt.Errorf("%v: %w", op, err)
	}
	m.apply(op, r, newIno)
	return nil
}

// crashBase formats a device with the starting tree, synced and closed,
// and returns it with its model.
func crashBase(t testing.TB) (*memdev.Device, crashModel) {
	d := memdev.New(32 << 20)
	if err := Mkfs(d, MkfsOptions{NodeSize: 4096}); err != nil {
		t.Fatal(err)
	}
	s, err := Open(d, crashOptions())
	if err != nil {
		t.Fatal(err)
	}
	m := crashModel{RootIno: {dir: true, ents: map[string]Ino{}}}
	for i, op := range crashSetup {
		if err := crashExec(s, m, op, 1000+i); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	return d, m
}

// crashCheckWorkloads runs each workload of ws (run) and checks every
// crash point of its run, on GOMAXPROCS workers; the crash points of
// workload i are chosen by a PCG seeded (i, seed). It reports the first
// failures (up to 10, a workload's first failing crash point each) and
// stops taking workloads after them, and returns the crash points checked.
func crashCheckWorkloads(t *testing.T, ws []crashWorkload, seed uint64, run func(crashWorkload) (*crashRun, error)) int64 {
	var (
		cases    atomic.Int64
		failures atomic.Int64
		next     atomic.Int64
		wg       sync.WaitGroup
	)
	const maxReported = 10
	fail := func(format string, args ...any) {
		if failures.Add(1) <= maxReported {
			t.Errorf(format, args...)
		}
	}
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= len(ws) || failures.Load() >= maxReported {
					return
				}
				w := ws[i]
				r, err := run(w)
				if err != nil {
					fail("workload %d [%v]: run: %v", i, w, err)
					continue
				}
				for _, p := range r.crashPoints(rand.New(rand.NewPCG(uint64(i), seed))) {
					cases.Add(1)
					if err := r.check(p); err != nil {
						fail("workload %d [%v]: crash at %v (steps' op start %v, persistence points done %v): %v",
							i, w, p, r.opStart[1:], r.ppDone[1:], err)
						break
					}
				}
			}
		})
	}
	wg.Wait()
	return cases.Load()
}

// crashRunWorkload runs w on a copy of base (whose model is m0).
func crashRunWorkload(base *memdev.Device, m0 crashModel, w crashWorkload) (*crashRun, error) {
	return crashRunWorkloadWith(base, m0, w, crashOptions(), nil)
}

// crashRunWorkloadWith is crashRunWorkload with the store opened with
// opts, and between, when not nil, run after each step's operation and
// before its persistence point (crash_evict_test.go evicts inodes there).
func crashRunWorkloadWith(base *memdev.Device, m0 crashModel, w crashWorkload, opts Options, between func(s *Store, m crashModel, st crashStep) error) (*crashRun, error) {
	ctx := context.Background()
	d := base.Crash(memdev.KeepNone())
	s, err := Open(d, opts)
	if err != nil {
		return nil, err
	}
	defer s.Close(ctx)
	r := &crashRun{w: w, d: d, start: d.Seq(),
		states: []crashModel{m0}, opStart: []uint64{0}, ppDone: []uint64{0},
		guar: []crashGuar{{file: map[Ino]int{}, dir: map[Ino]int{}, entry: map[crashEntry]int{}, xattrs: map[Ino]int{}}}}
	m := m0.clone()
	for i, st := range w {
		step := i + 1
		r.opStart = append(r.opStart, d.Seq())
		if err := crashExec(s, m, st.op, i); err != nil {
			return nil, fmt.Errorf("step %d: %w", step, err)
		}
		r.states = append(r.states, m.clone())
		if between != nil {
			if err := between(s, m, st); err != nil {
				return nil, fmt.Errorf("step %d: between the operation and %v: %w", step, st.pp, err)
			}
		}
		g := r.guar[i].clone()
		switch st.pp.kind {
		case ppSync:
			err = s.Sync(ctx)
			g.sync = step
		case ppFsyncHeld:
			// An orphan's fsync promises nothing a crash leaves (mount
			// frees it); a named file's, its content.
			ino, ok := m.held(st.pp.path)
			if !ok {
				return nil, fmt.Errorf("step %d: %v: nothing held", step, st.pp)
			}
			err = s.Fsync(ctx, ino, false)
			if m.links(ino) > 0 {
				g.file[ino] = step
			}
		default:
			ino, ok := m.lookup(st.pp.path)
			if !ok {
				return nil, fmt.Errorf("step %d: %v: no such file", step, st.pp)
			}
			err = s.Fsync(ctx, ino, st.pp.kind == ppFdatasync)
			if st.pp.kind == ppFsyncDir {
				g.dir[ino] = step
			} else {
				g.file[ino] = step
			}
			if st.pp.kind != ppFdatasync {
				g.xattrs[ino] = step
			}
			if m0[ino] == nil {
				// New: its names too.
				for _, e := range m.namesOf(ino) {
					g.entry[e] = step
				}
			}
		}
		if err != nil {
			return nil, fmt.Errorf("step %d: %v: %w", step, st.pp, err)
		}
		r.ppDone = append(r.ppDone, d.Seq())
		r.guar = append(r.guar, g)
	}
	r.end = d.Seq()
	return r, nil
}

// crashPoint is one power cut: after operation seq, keeping the unflushed
// writes in keep, and tearing write tear (if ≥ 0) to the pieces in pieces.
type crashPoint struct {
	seq    uint64
	all    bool // keep every unflushed write
	keep   uint64
	tear   int
	pieces uint64
}

func (p crashPoint) String() string {
	switch {
	case p.all:
		return fmt.Sprintf("seq %d keep all", p.seq)
	case p.tear >= 0:
		return fmt.Sprintf("seq %d keep %#b tear %d pieces %#b", p.seq, p.keep, p.tear, p.pieces)
	}
	return fmt.Sprintf("seq %d keep %#b", p.seq, p.keep)
}

func (p crashPoint) policy(d *memdev.Device) memdev.CrashPolicy {
	if p.all {
		return memdev.KeepAll()
	}
	pol := memdev.KeepSubset(p.keep)
	if p.tear >= 0 {
		w := d.UnflushedAt(p.seq)[p.tear]
		pol.Tear = &memdev.Tear{Index: p.tear, Pieces: memdev.MaskPieces(p.pieces, w.Pieces())}
	}
	return pol
}

// crashPoints are the run's power cuts: before the workload; after every
// flush; after every write, keeping all unflushed writes, and once more
// keeping a random subset of them, with one torn half the time (a lone
// unflushed write is torn).
func (r *crashRun) crashPoints(rng *rand.Rand) []crashPoint {
	pts := []crashPoint{{seq: r.start, tear: -1}}
	for _, op := range r.d.Ops() {
		if op.Seq <= r.start || op.Seq > r.end || op.Err != nil {
			continue
		}
		switch op.Kind {
		case memdev.OpFlush:
			pts = append(pts, crashPoint{seq: op.Seq, tear: -1})
		case memdev.OpWrite:
			pts = append(pts, crashPoint{seq: op.Seq, all: true, tear: -1})
			un := r.d.UnflushedAt(op.Seq)
			p := crashPoint{seq: op.Seq, tear: -1}
			switch {
			case len(un) >= 2:
				p.keep = rng.Uint64() & (1<<min(len(un), 64) - 1)
				if rng.IntN(2) == 0 {
					p.tear = rng.IntN(len(un))
				}
			case un[0].Pieces() > 1:
				p.tear = 0
			default:
				continue
			}
			if p.tear >= 0 {
				p.pieces = rng.Uint64()
			}
			pts = append(pts, p)
		}
	}
	return pts
}

// crashDisk is what a mounted store holds, found by walking it from the
// root.
type crashDisk struct {
	files  map[Ino][]byte // a symbolic link's: its target
	links  map[Ino]bool
	dirs   map[Ino]bool
	ents   map[crashEntry]Ino
	xattrs map[Ino]map[string]string // of every inode found
}

func crashWalk(s *Store) (*crashDisk, error) {
	disk := &crashDisk{files: map[Ino][]byte{}, links: map[Ino]bool{}, dirs: map[Ino]bool{RootIno: true}, ents: map[crashEntry]Ino{}, xattrs: map[Ino]map[string]string{}}
	queue := []Ino{RootIno}
	for len(queue) > 0 {
		dir := queue[0]
		queue = queue[1:]
		var cookie uint64
		for {
			es, err := s.ReadDir(dir, cookie, 64)
			if err != nil {
				return nil, fmt.Errorf("readdir %d: %w", dir, err)
			}
			for _, e := range es {
				cookie = e.Cookie
				disk.ents[crashEntry{dir, e.Name}] = e.Ino
				a, err := s.Stat(e.Ino)
				if err != nil {
					return nil, fmt.Errorf("stat %d (%q in %d): %w", e.Ino, e.Name, dir, err)
				}
				if a.IsDir() != (e.Type == TypeDir) || a.IsLink() != (e.Type == TypeLink) {
					return nil, fmt.Errorf("entry %q in %d has type %d, inode %d mode %o", e.Name, dir, e.Type, e.Ino, a.Mode)
				}
				if a.IsDir() {
					if disk.dirs[e.Ino] {
						return nil, fmt.Errorf("directory %d reachable twice", e.Ino)
					}
					disk.dirs[e.Ino] = true
					queue = append(queue, e.Ino)
					continue
				}
				if _, ok := disk.files[e.Ino]; ok {
					continue
				}
				if a.IsLink() {
					target, err := s.Readlink(e.Ino)
					if err != nil {
						return nil, fmt.Errorf("readlink inode %d (%q in %d): %w", e.Ino, e.Name, dir, err)
					}
					disk.files[e.Ino], disk.links[e.Ino] = []byte(target), true
					continue
				}
				buf := make([]byte, a.Size)
				n, err := s.Read(e.Ino, 0, buf)
				if err != nil {
					return nil, fmt.Errorf("read inode %d (%q in %d): %w", e.Ino, e.Name, dir, err)
				}
				if n != len(buf) {
					return nil, fmt.Errorf("read inode %d: %d bytes of %d", e.Ino, n, len(buf))
				}
				disk.files[e.Ino] = buf
			}
			if len(es) < 64 {
				break
			}
		}
	}
	for _, ino := range append(slices.Collect(maps.Keys(disk.dirs)), slices.Collect(maps.Keys(disk.files))...) {
		names, err := s.ListXattr(ino)
		if err != nil {
			return nil, fmt.Errorf("listxattr %d: %w", ino, err)
		}
		xs := map[string]string{}
		for _, n := range names {
			v, err := s.GetXattr(ino, n)
			if err != nil {
				return nil, fmt.Errorf("getxattr %d %q: %w", ino, n, err)
			}
			xs[n] = string(v)
		}
		disk.xattrs[ino] = xs
	}
	return disk, nil
}

// crashXattrsOK checks every inode's extended attributes on disk: the set
// of one state in the window from the last persistence point that made
// them durable (g.xattrs: an fsync of the inode; a sync).
func crashXattrsOK(disk *crashDisk, g crashGuar, window []crashModel) []error {
	var errs []error
	for _, ino := range slices.Sorted(maps.Keys(disk.xattrs)) {
		from := max(g.sync, g.xattrs[ino])
		ok, seen := false, false
		for _, m := range window[from:] {
			if n := m[ino]; n != nil {
				seen = true
				ok = ok || maps.Equal(n.xattrs, disk.xattrs[ino])
			}
		}
		if seen && !ok {
			errs = append(errs, fmt.Errorf("inode %d: extended attributes %v, not a set it had since step %d", ino, disk.xattrs[ino], from))
		}
	}
	return errs
}

// crashContentOK reports whether got may be what a crash left of a file
// whose versions, in the window, were vals (oldest first): it has the size
// of one of them, t, and each byte at offset o is
//
//   - o's byte in some version u, and o lay inside the file in every
//     version from u to t (it was never cut off in between: a byte a
//     truncate removed must not come back), or
//   - zero, if o lay past the end of some version up to t (the file grew
//     over it since: a lost write, a hole, an extension).
//
// So a write may be lost while a truncate after it survives, but no
// truncated byte reappears and no byte comes from nowhere.
func crashContentOK(got []byte, vals [][]byte) bool {
	for t, vt := range vals {
		if len(vt) == len(got) && crashBytesOK(got, vals, t) {
			return true
		}
	}
	return false
}

func crashBytesOK(got []byte, vals [][]byte, t int) bool {
	// span[u]: the smallest size from u to t; zeroFrom: the smallest size
	// up to t (past it a byte may be zero).
	span := make([]int, len(vals))
	zeroFrom := len(got)
	for u := range vals {
		lo, hi := min(u, t), max(u, t)
		span[u] = len(vals[lo])
		for w := lo; w <= hi; w++ {
			span[u] = min(span[u], len(vals[w]))
		}
		if u <= t {
			zeroFrom = min(zeroFrom, len(vals[u]))
		}
	}
	for o, c := range got {
		if c == 0 && o >= zeroFrom {
			continue
		}
		ok := false
		for u, v := range vals {
			if o < span[u] && v[o] == c {
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
	}
	return true
}

// check mounts what the power cut p left and checks it against r.
func (r *crashRun) check(p crashPoint) error {
	return crashMountCheck(r.d.CrashAt(p.seq, p.policy(r.d)), func(s *Store, disk *crashDisk) error {
		return r.checkStates(p, s, disk)
	})
}

// checkStates checks what the walk of the mounted store s found against
// the states r's workload may have left at the power cut p.
func (r *crashRun) checkStates(p crashPoint, s *Store, disk *crashDisk) error {

	// k: the last persistence point that had returned; last: the last
	// step whose operation may have reached the device.
	k, last := 0, 0
	for i := 1; i < len(r.ppDone); i++ {
		if r.ppDone[i] <= p.seq {
			k = i
		}
		if r.opStart[i] < p.seq {
			last = i
		}
	}
	last = max(last, k)
	g := r.guar[k]
	window := r.states

	// Names: every (dir, name) that any state or the disk has.
	names := map[crashEntry]bool{}
	for _, m := range window[:last+1] {
		for d, n := range m {
			for name := range n.ents {
				names[crashEntry{d, name}] = true
			}
		}
	}
	for e := range disk.ents {
		names[e] = true
	}
	var errs []error
	for _, e := range slices.SortedFunc(maps.Keys(names), func(a, b crashEntry) int {
		if a.dir != b.dir {
			return int(a.dir) - int(b.dir)
		}
		return strings.Compare(a.name, b.name)
	}) {
		from := max(g.sync, g.dir[e.dir], g.entry[e])
		var vals []Ino
		for _, m := range window[from : last+1] {
			vals = append(vals, m.entry(e.dir, e.name))
		}
		if got := disk.ents[e]; !slices.Contains(vals, got) {
			errs = append(errs, fmt.Errorf("name %q in dir %d: inode %d, want one of %v (durable as of step %d)", e.name, e.dir, got, vals, from))
		} else if got != 0 {
			isDir := false
			for _, m := range window[from : last+1] {
				if n := m[got]; n != nil {
					isDir = n.dir
				}
			}
			if isDir != disk.dirs[got] {
				errs = append(errs, fmt.Errorf("name %q in dir %d: inode %d is a directory: %v, want %v", e.name, e.dir, got, disk.dirs[got], isDir))
			}
		}
	}

	// Files: every file inode any state or the disk has.
	inos := map[Ino]bool{}
	for _, m := range window[:last+1] {
		for ino, n := range m {
			if !n.dir && m.named(ino) {
				inos[ino] = true
			}
		}
	}
	for ino := range disk.files {
		inos[ino] = true
	}
	for _, ino := range slices.Sorted(maps.Keys(inos)) {
		from := max(g.sync, g.file[ino])
		var vals [][]byte
		absentOK, link := false, false
		for _, m := range window[from : last+1] {
			if n := m[ino]; n != nil && m.named(ino) {
				vals = append(vals, n.data)
				link = n.link
			} else {
				absentOK = true // gone, or an orphan (mount frees it)
			}
		}
		got, present := disk.files[ino]
		switch {
		case !present && !absentOK:
			errs = append(errs, fmt.Errorf("file %d: gone, but durable as of step %d", ino, from))
		case present && link != disk.links[ino]:
			errs = append(errs, fmt.Errorf("inode %d: a symbolic link: %v, want %v", ino, disk.links[ino], link))
		case present && link && !slices.ContainsFunc(vals, func(v []byte) bool { return string(v) == string(got) }):
			errs = append(errs, fmt.Errorf("symbolic link %d: target of %d bytes, want its own (%d bytes)", ino, len(got), len(vals[0])))
		case present && !crashContentOK(got, vals):
			sizes := make([]int, len(vals))
			for i, v := range vals {
				sizes[i] = len(v)
			}
			errs = append(errs, fmt.Errorf("file %d: %d bytes, not one of the %d versions (sizes %v) since step %d", ino, len(got), len(vals), sizes, from))
		}
	}
	errs = append(errs, crashXattrsOK(disk, g, window[:last+1])...)
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("after step %d durable, step %d begun: %w", k, last, err)
	}
	return nil
}

// crashAfter checks that the store a crash left stays usable: new data
// (which takes space the crash left free) goes in, syncs, and leaves fsck
// clean and what the store held untouched.
func crashAfter(s *Store, disk *crashDisk) error {
	a, err := s.Create(RootIno, "after-crash", 0o644)
	if err == nil {
		_, err = s.Write(a.Ino, 0, crashData(2000, 0, 3*blockSize+500))
	}
	if err == nil {
		err = s.Sync(context.Background())
	}
	if err != nil {
		return fmt.Errorf("after the crash: %w", err)
	}
	if err := s.Check(); err != nil {
		return fmt.Errorf("fsck after writing after the crash: %w", err)
	}
	again, err := crashWalk(s)
	if err != nil {
		return fmt.Errorf("after writing after the crash: %w", err)
	}
	for ino, data := range disk.files {
		if got := again.files[ino]; string(got) != string(data) {
			return fmt.Errorf("after writing after the crash: file %d changed (%d bytes, was %d)", ino, len(got), len(data))
		}
	}
	return nil
}

// ---- the test ----

func TestCrash_Workloads(t *testing.T) {
	env := os.Getenv("USTORE_CRASH_FULL")
	full := env != "" && env != "0"
	start := time.Now()
	base, m0 := crashBase(t)

	// Every workload of one step; of two steps every one in full mode,
	// a fixed sample otherwise; random ones of three steps.
	var ws []crashWorkload
	crashEnumerate(m0, 1, func(w crashWorkload) { ws = append(ws, w) })
	n1 := len(ws)
	var two []crashWorkload
	crashEnumerate(m0, 2, func(w crashWorkload) { two = append(two, w) })
	n2all := len(two)
	seed := uint64(20240601)
	if v, err := strconv.ParseUint(os.Getenv("USTORE_CRASH_SEED"), 10, 64); err == nil {
		seed = v
	}
	rng := rand.New(rand.NewPCG(seed, 1))
	n2, n3 := 500, 200
	if full {
		n2, n3 = len(two), 20000
		if n, err := strconv.Atoi(env); err == nil && n > 1 {
			n3 = n
		}
	}
	if n2 < len(two) {
		rng.Shuffle(len(two), func(i, j int) { two[i], two[j] = two[j], two[i] })
		two = two[:n2]
	}
	ws = append(ws, two...)
	ws = append(ws, crashRegressions...)
	ws = append(ws, crashOrphanWorkloads...)
	batches := crashBatchWorkloads(m0)
	if raceEnabled() && !full {
		// Every batch's first step, one in four of the rest.
		keep := rand.New(rand.NewPCG(seed, 15))
		batches = slices.DeleteFunc(batches, func(w crashWorkload) bool { return len(w) > 1 && keep.IntN(4) != 0 })
	}
	ws = append(ws, batches...)
	for range n3 {
		ws = append(ws, crashRandom(rng, m0, 3))
	}

	cases := crashCheckWorkloads(t, ws, 7, func(w crashWorkload) (*crashRun, error) { return crashRunWorkload(base, m0, w) })
	mode := "default"
	if full {
		mode = "full"
	}
	t.Logf("%s (seed %d): %d workloads (%d of 1 step, %d of %d of 2 steps, %d regressions, %d with open files, %d with batched creates, %d random of 3), %d crash points checked, %v",
		mode, seed, len(ws), n1, len(two), n2all, len(crashRegressions), len(crashOrphanWorkloads), len(batches), n3, cases, time.Since(start).Round(time.Millisecond))
}
