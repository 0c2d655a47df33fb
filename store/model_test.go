package store

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"ustore/dev/memdev"
)

// A model-based randomized test: random operations on the store and on a
// map-based model filesystem, their results compared after every
// operation, and the whole namespace and every file's content compared
// (and fsck run) after every sync and remount. A failure prints the seed,
// the options and the operations that led to it; -model.seed runs one
// seed, -model.ops sets the operation count.

var (
	modelSeedFlag = flag.Uint64("model.seed", 0, "TestModel: run only this seed")
	modelOpsFlag  = flag.Int("model.ops", 0, "TestModel: operations per seed (0: the default)")
)

// modelNode is an inode of the model.
type modelNode struct {
	dir     bool
	link    bool                // a symbolic link: data is its target
	data    []byte              // a file's content
	nlink   int                 // a file's names
	entries map[string]modelEnt // a directory's entries
	parent  Ino                 // a directory's parent
	holds   int                 // a file's Open holds: at nlink 0 it is an orphan
	xattrs  map[string]string   // extended attributes (model_xattr_test.go)
}

type modelEnt struct {
	ino Ino
	seq uint64 // creation order in the directory
}

// modelFS is the model: live inodes by number, and the numbers of the
// deleted ones.
type modelFS struct {
	nodes map[Ino]*modelNode
	dead  map[Ino]bool
	seq   uint64
	// orphansMade counts files whose last name went while held.
	orphansMade int
}

func newModelFS() *modelFS {
	return &modelFS{
		nodes: map[Ino]*modelNode{RootIno: {dir: true, entries: map[string]modelEnt{}, parent: RootIno}},
		dead:  map[Ino]bool{},
	}
}

func (m *modelFS) nameErr(name string) syscall.Errno {
	switch {
	case name == "" || name == "." || name == ".." || strings.ContainsAny(name, "/\x00"):
		return syscall.EINVAL
	case len(name) > 255:
		return syscall.ENAMETOOLONG
	}
	return 0
}

// dirErr is getDir's answer for ino.
func (m *modelFS) dirErr(ino Ino) syscall.Errno {
	n := m.nodes[ino]
	switch {
	case n == nil:
		return syscall.ENOENT
	case !n.dir:
		return syscall.ENOTDIR
	}
	return 0
}

func (m *modelFS) subdirs(ino Ino) int {
	k := 0
	for _, e := range m.nodes[ino].entries {
		if m.nodes[e.ino].dir {
			k++
		}
	}
	return k
}

// attr is what Stat should say: nlink and size.
func (m *modelFS) attr(ino Ino) (nlink uint32, size uint64) {
	n := m.nodes[ino]
	if n.dir {
		return uint32(2 + m.subdirs(ino)), uint64(len(n.entries))
	}
	return uint32(n.nlink), uint64(len(n.data))
}

func (m *modelFS) addEntry(dir Ino, name string, ino Ino) {
	m.seq++
	m.nodes[dir].entries[name] = modelEnt{ino: ino, seq: m.seq}
	if n := m.nodes[ino]; n.dir {
		n.parent = dir
	}
}

// dropName removes name from dir and drops the inode with its last name.
func (m *modelFS) dropName(dir Ino, name string) {
	e := m.nodes[dir].entries[name]
	delete(m.nodes[dir].entries, name)
	n := m.nodes[e.ino]
	if !n.dir {
		n.nlink--
		if n.nlink == 0 && n.holds > 0 {
			m.orphansMade++
		}
		if n.nlink > 0 || n.holds > 0 {
			return // a name left, or held: an orphan until its last release
		}
	}
	delete(m.nodes, e.ino)
	m.dead[e.ino] = true
}

// orphans is the number of files held open with no name left.
func (m *modelFS) orphans() int {
	k := 0
	for _, n := range m.nodes {
		if !n.dir && n.nlink == 0 {
			k++
		}
	}
	return k
}

// dropHolds drops every hold, as a remount does: the orphans go.
func (m *modelFS) dropHolds() {
	for ino, n := range m.nodes {
		n.holds = 0
		if !n.dir && n.nlink == 0 {
			delete(m.nodes, ino)
			m.dead[ino] = true
		}
	}
}

// under reports whether dir is anc or lies under it.
func (m *modelFS) under(dir Ino, anc Ino) bool {
	for {
		if dir == anc {
			return true
		}
		if dir == RootIno {
			return false
		}
		dir = m.nodes[dir].parent
	}
}

// listing is dir's entries in creation order.
func (m *modelFS) listing(dir Ino) []DirEntry {
	type named struct {
		name string
		e    modelEnt
	}
	var es []named
	for name, e := range m.nodes[dir].entries {
		es = append(es, named{name, e})
	}
	slices.SortFunc(es, func(a, b named) int { return int(a.e.seq) - int(b.e.seq) })
	out := make([]DirEntry, len(es))
	for i, e := range es {
		typ := uint8(TypeFile)
		switch n := m.nodes[e.e.ino]; {
		case n.dir:
			typ = TypeDir
		case n.link:
			typ = TypeLink
		}
		out[i] = DirEntry{Name: e.name, Ino: e.e.ino, Type: typ}
	}
	return out
}

// modelRun is one seed's run: the store, the model, the log.
type modelRun struct {
	t    *testing.T
	seed uint64
	rng  *rand.Rand
	dev  *memdev.Device
	opts Options
	s    *Store
	m    *modelFS
	log  []string
	// maxFile bounds a file's size in the model (and its far writes).
	maxFile int
	// targetMax is the longest symbolic link target at the run's node
	// size (docs/FORMAT.md).
	targetMax int
	// outcomes counts results by errno (0: success), for the summary.
	outcomes map[syscall.Errno]int
	syncs    int
	buf      []byte // verifyAll's read buffer
	// changed: files written or truncated since the last verifyAll, whose
	// content a sync's verification reads (a remount's reads all).
	changed map[Ino]bool
}

func (r *modelRun) logf(format string, args ...any) {
	r.log = append(r.log, fmt.Sprintf("%4d ", len(r.log))+fmt.Sprintf(format, args...))
}

func (r *modelRun) fatalf(format string, args ...any) {
	r.t.Helper()
	tail := r.log
	const keep = 400
	if len(tail) > keep {
		tail = tail[len(tail)-keep:]
	}
	r.t.Fatalf("seed %d (reproduce: go test ./store -run 'TestModel$' -model.seed=%d), options %+v\n%s\n\nlast %d of %d operations:\n%s",
		r.seed, r.seed, r.opts, fmt.Sprintf(format, args...), len(tail), len(r.log), strings.Join(tail, "\n"))
}

// check compares an operation's error with the errno the model expects.
func (r *modelRun) check(what string, err error, want syscall.Errno) {
	r.t.Helper()
	if err != nil {
		var pe *fs.PathError
		if !errors.As(err, &pe) {
			r.fatalf("%s: %v (%T) is not a *fs.PathError", what, err, err)
		}
	}
	if got := ErrnoOf(err); got != want {
		r.fatalf("%s: got %v (errno %d), want errno %d (%v)", what, err, got, want, want)
	}
	r.outcomes[want]++
}

// Random choices.

var modelNames = []string{"a", "b", "c", "d", "e", "f", "g", "h"}

func (r *modelRun) name() string {
	if r.rng.IntN(40) == 0 {
		return []string{"", ".", "..", "x/y", "x\x00", strings.Repeat("z", 256)}[r.rng.IntN(6)]
	}
	if r.rng.IntN(30) == 0 {
		return strings.Repeat("L", 255)
	}
	return modelNames[r.rng.IntN(len(modelNames))]
}

// inos returns the model's live inodes of a kind, sorted (for determinism).
func (r *modelRun) inos(dir bool) []Ino {
	var out []Ino
	for ino, n := range r.m.nodes {
		if n.dir == dir {
			out = append(out, ino)
		}
	}
	slices.Sort(out)
	return out
}

func (r *modelRun) pickFrom(xs []Ino) Ino {
	if len(xs) == 0 {
		return 1 << 40
	}
	return xs[r.rng.IntN(len(xs))]
}

func (r *modelRun) deadIno() Ino {
	var xs []Ino
	for ino := range r.m.dead {
		xs = append(xs, ino)
	}
	slices.Sort(xs)
	return r.pickFrom(xs)
}

// pick returns an inode of the kind wanted most of the time, and now and
// then one of the other kind, a deleted one, or one that never existed.
func (r *modelRun) pick(dir bool) Ino {
	switch k := r.rng.IntN(40); {
	case k == 0:
		return r.deadIno()
	case k == 1:
		return 1<<40 + Ino(r.rng.IntN(10))
	case k <= 3:
		return r.pickFrom(r.inos(!dir))
	}
	if dir && r.rng.IntN(4) == 0 {
		return RootIno
	}
	return r.pickFrom(r.inos(dir))
}

func (r *modelRun) data(n int) []byte {
	b := make([]byte, n)
	x := r.rng.Uint64()
	for i := range b {
		if i%8 == 0 {
			x = x*6364136223846793005 + 1442695040888963407
		}
		b[i] = byte(x >> (8 * (i % 8)))
	}
	return b
}

// One operation of each kind: each runs on the store and the model.

func (r *modelRun) opMake(dir bool) {
	parent, name := r.pick(true), r.name()
	want := r.m.nameErr(name)
	if want == 0 {
		want = r.m.dirErr(parent)
	}
	if want == 0 {
		if _, ok := r.m.nodes[parent].entries[name]; ok {
			want = syscall.EEXIST
		}
	}
	what := fmt.Sprintf("create(%d, %.12q)", parent, name)
	var a Attr
	var err error
	if dir {
		what = fmt.Sprintf("mkdir(%d, %.12q)", parent, name)
		a, err = r.s.Mkdir(parent, name, 0o750)
	} else {
		a, err = r.s.Create(parent, name, 0o640)
	}
	r.logf("%s = %d, %v", what, a.Ino, err)
	r.check(what, err, want)
	if err != nil {
		return
	}
	if _, ok := r.m.nodes[a.Ino]; ok {
		r.fatalf("%s: inode %d is in use", what, a.Ino)
	}
	delete(r.m.dead, a.Ino) // numbers of deleted inodes come back after a remount
	n := &modelNode{dir: dir, nlink: 1}
	wantNlink, perm := uint32(1), uint32(0o640)
	if dir {
		n.entries = map[string]modelEnt{}
		wantNlink, perm = 2, 0o750
	}
	r.m.nodes[a.Ino] = n
	r.m.addEntry(parent, name, a.Ino)
	if a.Nlink != wantNlink || a.Size != 0 || a.IsDir() != dir || a.Mode&ModePerm != perm {
		r.fatalf("%s: attributes %+v", what, a)
	}
}

// opSymlink makes a symbolic link: mostly a short target, now and then
// an empty one (ENOENT), the longest (targetMax) or one byte more
// (ENAMETOOLONG).
func (r *modelRun) opSymlink() {
	parent, name := r.pick(true), r.name()
	var target string
	switch k := r.rng.IntN(20); {
	case k == 0:
		target = ""
	case k == 1:
		target = strings.Repeat("T", r.targetMax)
	case k == 2:
		target = strings.Repeat("T", r.targetMax+1)
	default:
		target = string(r.data(1 + r.rng.IntN(100)))
		target = strings.ReplaceAll(target, "\x00", "0")
	}
	var want syscall.Errno
	switch {
	case target == "":
		want = syscall.ENOENT
	case len(target) > r.targetMax:
		want = syscall.ENAMETOOLONG
	}
	if want == 0 {
		want = r.m.nameErr(name)
	}
	if want == 0 {
		want = r.m.dirErr(parent)
	}
	if want == 0 {
		if _, ok := r.m.nodes[parent].entries[name]; ok {
			want = syscall.EEXIST
		}
	}
	what := fmt.Sprintf("symlink(%d, %.12q, %d bytes)", parent, name, len(target))
	a, err := r.s.Symlink(parent, name, target)
	r.logf("%s = %d, %v", what, a.Ino, err)
	r.check(what, err, want)
	if err != nil {
		return
	}
	if _, ok := r.m.nodes[a.Ino]; ok {
		r.fatalf("%s: inode %d is in use", what, a.Ino)
	}
	delete(r.m.dead, a.Ino)
	r.m.nodes[a.Ino] = &modelNode{link: true, nlink: 1, data: []byte(target)}
	r.m.addEntry(parent, name, a.Ino)
	r.compareAttr(what, a.Ino, a)
	if a.Mode != ModeLink|0o777 {
		r.fatalf("%s: mode %o", what, a.Mode)
	}
}

// opReadlink reads a link's target: EINVAL for any other inode.
func (r *modelRun) opReadlink() {
	ino := r.pick(false)
	n := r.m.nodes[ino]
	var want syscall.Errno
	switch {
	case n == nil:
		want = syscall.ENOENT
	case !n.link:
		want = syscall.EINVAL
	}
	what := fmt.Sprintf("readlink(%d)", ino)
	got, err := r.s.Readlink(ino)
	r.logf("%s = %d bytes, %v", what, len(got), err)
	r.check(what, err, want)
	if err == nil && got != string(n.data) {
		r.fatalf("%s: %d bytes, want %d", what, len(got), len(n.data))
	}
}

func (r *modelRun) opLink() {
	ino, parent, name := r.pick(false), r.pick(true), r.name()
	want := r.m.nameErr(name)
	if want == 0 {
		want = r.m.dirErr(parent)
	}
	if want == 0 {
		switch n := r.m.nodes[ino]; {
		case n == nil, !n.dir && n.nlink == 0: // an orphan gets no name back
			want = syscall.ENOENT
		case n.dir:
			want = syscall.EPERM
		}
	}
	if want == 0 {
		if _, ok := r.m.nodes[parent].entries[name]; ok {
			want = syscall.EEXIST
		}
	}
	what := fmt.Sprintf("link(%d, %d, %.12q)", ino, parent, name)
	a, err := r.s.Link(ino, parent, name)
	r.logf("%s = %v", what, err)
	r.check(what, err, want)
	if err != nil {
		return
	}
	r.m.nodes[ino].nlink++
	r.m.addEntry(parent, name, ino)
	if a.Ino != ino || a.Nlink != uint32(r.m.nodes[ino].nlink) {
		r.fatalf("%s: attributes %+v, want nlink %d", what, a, r.m.nodes[ino].nlink)
	}
}

func (r *modelRun) opRemove(dir bool) {
	parent, name := r.pick(true), r.name()
	// Mostly a name that exists.
	if n := r.m.nodes[parent]; n != nil && n.dir && len(n.entries) > 0 && r.rng.IntN(3) > 0 {
		names := slices.Sorted(func(yield func(string) bool) {
			for k := range n.entries {
				if !yield(k) {
					return
				}
			}
		})
		name = names[r.rng.IntN(len(names))]
	}
	want := r.m.nameErr(name)
	if want == 0 {
		want = r.m.dirErr(parent)
	}
	var e modelEnt
	if want == 0 {
		var ok bool
		if e, ok = r.m.nodes[parent].entries[name]; !ok {
			want = syscall.ENOENT
		}
	}
	if want == 0 {
		victim := r.m.nodes[e.ino]
		switch {
		case dir && !victim.dir:
			want = syscall.ENOTDIR
		case !dir && victim.dir:
			want = syscall.EISDIR
		case dir && len(victim.entries) > 0:
			want = syscall.ENOTEMPTY
		}
	}
	var err error
	what := fmt.Sprintf("unlink(%d, %.12q)", parent, name)
	if dir {
		what = fmt.Sprintf("rmdir(%d, %.12q)", parent, name)
		err = r.s.Rmdir(parent, name)
	} else {
		err = r.s.Unlink(parent, name)
	}
	r.logf("%s = %v", what, err)
	r.check(what, err, want)
	if err == nil {
		r.m.dropName(parent, name)
	}
}

func (r *modelRun) opRename() {
	sd, dd := r.pick(true), r.pick(true)
	sn, dn := r.name(), r.name()
	if n := r.m.nodes[sd]; n != nil && n.dir && len(n.entries) > 0 && r.rng.IntN(4) > 0 {
		names := slices.Sorted(func(yield func(string) bool) {
			for k := range n.entries {
				if !yield(k) {
					return
				}
			}
		})
		sn = names[r.rng.IntN(len(names))]
	}
	want := r.m.nameErr(sn)
	if want == 0 {
		want = r.m.nameErr(dn)
	}
	if want == 0 {
		want = r.m.dirErr(sd)
	}
	if want == 0 {
		want = r.m.dirErr(dd)
	}
	var se, de modelEnt
	exists, noop := false, false
	if want == 0 {
		var ok bool
		if se, ok = r.m.nodes[sd].entries[sn]; !ok {
			want = syscall.ENOENT
		}
		de, exists = r.m.nodes[dd].entries[dn]
	}
	if want == 0 && exists && de.ino == se.ino {
		noop = true
	}
	if want == 0 && !noop {
		src := r.m.nodes[se.ino]
		if src.dir && r.m.under(dd, se.ino) {
			want = syscall.EINVAL
		} else if exists {
			victim := r.m.nodes[de.ino]
			switch {
			case src.dir && !victim.dir:
				want = syscall.ENOTDIR
			case !src.dir && victim.dir:
				want = syscall.EISDIR
			case victim.dir && len(victim.entries) > 0:
				want = syscall.ENOTEMPTY
			}
		}
	}
	what := fmt.Sprintf("rename(%d, %.12q, %d, %.12q)", sd, sn, dd, dn)
	err := r.s.Rename(sd, sn, dd, dn)
	r.logf("%s = %v", what, err)
	r.check(what, err, want)
	if err != nil || noop {
		return
	}
	if exists {
		r.m.dropName(dd, dn)
	}
	delete(r.m.nodes[sd].entries, sn)
	r.m.addEntry(dd, dn, se.ino)
}

// opRename2 is renameat2 with RENAME_NOREPLACE or RENAME_EXCHANGE (and
// now and then both, or RENAME_WHITEOUT: EINVAL), errno for errno in
// Linux's order.
func (r *modelRun) opRename2() {
	sd, dd := r.pick(true), r.pick(true)
	sn, dn := r.name(), r.name()
	for _, side := range []struct {
		dir  Ino
		name *string
	}{{sd, &sn}, {dd, &dn}} {
		if n := r.m.nodes[side.dir]; n != nil && n.dir && len(n.entries) > 0 && r.rng.IntN(4) > 0 {
			names := slices.Sorted(maps.Keys(n.entries))
			*side.name = names[r.rng.IntN(len(names))]
		}
	}
	var flags uint32
	switch k := r.rng.IntN(100); {
	case k < 40:
		flags = RenameNoReplace
	case k < 90:
		flags = RenameExchange
	case k < 95:
		flags = RenameNoReplace | RenameExchange
	default:
		flags = 4 // RENAME_WHITEOUT
	}
	want := syscall.Errno(0)
	if flags != RenameNoReplace && flags != RenameExchange {
		want = syscall.EINVAL
	}
	for _, e := range []func() syscall.Errno{
		func() syscall.Errno { return r.m.nameErr(sn) }, func() syscall.Errno { return r.m.nameErr(dn) },
		func() syscall.Errno { return r.m.dirErr(sd) }, func() syscall.Errno { return r.m.dirErr(dd) },
	} {
		if want == 0 {
			want = e()
		}
	}
	var se, de modelEnt
	exists, noop := false, false
	if want == 0 {
		var ok bool
		if se, ok = r.m.nodes[sd].entries[sn]; !ok {
			want = syscall.ENOENT
		}
		de, exists = r.m.nodes[dd].entries[dn]
	}
	if want == 0 {
		src := r.m.nodes[se.ino]
		switch {
		case flags == RenameNoReplace && exists:
			want = syscall.EEXIST
		case flags == RenameNoReplace && src.dir && r.m.under(dd, se.ino):
			want = syscall.EINVAL
		case flags == RenameExchange && !exists:
			want = syscall.ENOENT
		case flags == RenameExchange && de.ino == se.ino:
			noop = true
		case flags == RenameExchange && src.dir && r.m.under(dd, se.ino):
			want = syscall.EINVAL
		case flags == RenameExchange && r.m.nodes[de.ino].dir && r.m.under(sd, de.ino):
			want = syscall.EINVAL
		}
	}
	what := fmt.Sprintf("rename2(%d, %.12q, %d, %.12q, %#x)", sd, sn, dd, dn, flags)
	err := r.s.Rename2(sd, sn, dd, dn, flags)
	r.logf("%s = %v", what, err)
	r.check(what, err, want)
	if err != nil || noop {
		return
	}
	delete(r.m.nodes[sd].entries, sn)
	if flags == RenameExchange {
		delete(r.m.nodes[dd].entries, dn)
	}
	r.m.addEntry(dd, dn, se.ino)
	if flags == RenameExchange {
		r.m.addEntry(sd, sn, de.ino)
	}
}

// opFallocate allocates (mode 0, growing the file; KEEP_SIZE) or punches
// a hole (PUNCH_HOLE|KEEP_SIZE), and now and then asks for a mode the
// store lacks (EOPNOTSUPP).
func (r *modelRun) opFallocate() {
	ino := r.pick(false)
	n := r.m.nodes[ino]
	size := 0
	if n != nil && !n.dir {
		size = len(n.data)
	}
	var mode uint32
	switch k := r.rng.IntN(100); {
	case k < 45:
	case k < 65:
		mode = FallocKeepSize
	case k < 95:
		mode = FallocPunchHole | FallocKeepSize
	default:
		mode = FallocPunchHole
	}
	off := r.rng.IntN(size + 8192)
	ln := 1 + r.rng.IntN(64<<10)
	if r.rng.IntN(4) == 0 {
		off, ln = off/blockSize*blockSize, (1+r.rng.IntN(16))*blockSize
	}
	if off+ln > r.maxFile {
		off = max(0, r.maxFile-ln)
	}
	want := syscall.Errno(0)
	switch {
	case mode == FallocPunchHole:
		want = syscall.EOPNOTSUPP
	case n == nil:
		want = syscall.ENOENT
	case n.dir:
		want = syscall.EISDIR
	case n.link:
		want = syscall.EINVAL // as a write to one
	}
	what := fmt.Sprintf("fallocate(%d, %#x, off %d, len %d)", ino, mode, off, ln)
	a, err := r.s.Fallocate(ino, mode, int64(off), int64(ln))
	r.logf("%s = %v", what, err)
	r.check(what, err, want)
	if err != nil {
		return
	}
	switch mode {
	case 0:
		if off+ln > len(n.data) {
			n.data = append(n.data, make([]byte, off+ln-len(n.data))...)
		}
	case FallocPunchHole | FallocKeepSize:
		if off < len(n.data) {
			clear(n.data[off:min(off+ln, len(n.data))])
		}
	}
	if a.Size != uint64(len(n.data)) {
		r.fatalf("%s: size %d, want %d", what, a.Size, len(n.data))
	}
	r.changed[ino] = true
}

func (r *modelRun) opWrite() {
	ino := r.pick(false)
	n := r.m.nodes[ino]
	size := 0
	if n != nil && !n.dir {
		size = len(n.data)
	}
	var off, ln int
	switch k := r.rng.IntN(100); {
	case k < 35: // near the end: appends, overwrites of the tail, small gaps
		off = max(0, size-r.rng.IntN(8192)+r.rng.IntN(8192))
		ln = 1 + r.rng.IntN(8192)
	case k < 60: // anywhere in the file
		off = r.rng.IntN(size + 1)
		ln = 1 + r.rng.IntN(4096)
	case k < 85: // up to 64 KiB, anywhere up to 1 MiB
		off = r.rng.IntN(1 << 20)
		ln = 1 + r.rng.IntN(64<<10)
	case k < 92: // aligned whole blocks
		off = r.rng.IntN(256) * 4096
		ln = (1 + r.rng.IntN(16)) * 4096
	case k < 98: // far: sparse
		off = r.rng.IntN(r.maxFile - 64<<10)
		ln = 1 + r.rng.IntN(64<<10)
	default: // large: more than the background writeback threshold of a 1 MiB budget leaves
		ln = 800<<10 + r.rng.IntN(400<<10)
		off = r.rng.IntN(r.maxFile - ln)
	}
	if off+ln > r.maxFile {
		off = max(0, r.maxFile-ln)
	}
	data := r.data(ln)
	want := syscall.Errno(0)
	switch {
	case n == nil:
		want = syscall.ENOENT
	case n.dir:
		want = syscall.EISDIR
	case n.link:
		want = syscall.EINVAL
	}
	what := fmt.Sprintf("write(%d, off %d, len %d)", ino, off, ln)
	got, err := r.s.Write(ino, uint64(off), data)
	r.logf("%s = %d, %v", what, got, err)
	r.check(what, err, want)
	if err != nil {
		return
	}
	if got != ln {
		r.fatalf("%s: wrote %d", what, got)
	}
	if off+ln > len(n.data) {
		n.data = append(n.data, make([]byte, off+ln-len(n.data))...)
	}
	copy(n.data[off:], data)
	r.changed[ino] = true
}

func (r *modelRun) opTruncate() {
	ino := r.pick(false)
	n := r.m.nodes[ino]
	size := 0
	if n != nil && !n.dir {
		size = len(n.data)
	}
	var ns int
	switch k := r.rng.IntN(10); {
	case k < 2:
		ns = 0
	case k < 5:
		ns = r.rng.IntN(size + 1)
	case k < 7:
		ns = size + r.rng.IntN(10000)
	case k < 8:
		ns = r.rng.IntN(1<<20) / 4096 * 4096
	default:
		ns = max(0, size+r.rng.IntN(8192)-4096)
	}
	ns = min(ns, r.maxFile)
	want := syscall.Errno(0)
	switch {
	case n == nil:
		want = syscall.ENOENT
	case n.dir:
		want = syscall.EISDIR
	case n.link:
		want = syscall.EINVAL
	}
	what := fmt.Sprintf("truncate(%d, %d)", ino, ns)
	err := r.s.Truncate(ino, uint64(ns))
	r.logf("%s = %v", what, err)
	r.check(what, err, want)
	if err != nil {
		return
	}
	if ns < len(n.data) {
		n.data = n.data[:ns]
	} else {
		n.data = append(n.data, make([]byte, ns-len(n.data))...)
	}
	r.changed[ino] = true
}

func (r *modelRun) opRead() {
	ino := r.pick(false)
	n := r.m.nodes[ino]
	size := 0
	if n != nil && !n.dir {
		size = len(n.data)
	}
	off := r.rng.IntN(size + 100)
	ln := 1 + r.rng.IntN(64<<10)
	if r.rng.IntN(10) == 0 {
		off, ln = 0, size+10
	}
	want := syscall.Errno(0)
	switch {
	case n == nil:
		want = syscall.ENOENT
	case n.dir:
		want = syscall.EISDIR
	case n.link:
		want = syscall.EINVAL
	}
	what := fmt.Sprintf("read(%d, off %d, len %d)", ino, off, ln)
	buf := make([]byte, ln)
	got, err := r.s.Read(ino, uint64(off), buf)
	r.logf("%s = %d, %v", what, got, err)
	r.check(what, err, want)
	if err != nil {
		return
	}
	var exp []byte
	if off < size {
		exp = n.data[off:min(size, off+ln)]
	}
	if got != len(exp) || !bytes.Equal(buf[:got], exp) {
		r.fatalf("%s: %d bytes, want %d; first difference at %d", what, got, len(exp), posixFirstDiff(buf[:got], exp))
	}
}

func (r *modelRun) opLookup() {
	parent, name := r.pick(true), r.name()
	want := r.m.nameErr(name)
	if want == 0 {
		want = r.m.dirErr(parent)
	}
	var e modelEnt
	if want == 0 {
		var ok bool
		if e, ok = r.m.nodes[parent].entries[name]; !ok {
			want = syscall.ENOENT
		}
	}
	what := fmt.Sprintf("lookup(%d, %.12q)", parent, name)
	a, err := r.s.Lookup(parent, name)
	r.logf("%s = %d, %v", what, a.Ino, err)
	r.check(what, err, want)
	if err == nil {
		r.compareAttr(what, e.ino, a)
	}
}

func (r *modelRun) compareAttr(what string, ino Ino, a Attr) {
	r.t.Helper()
	nlink, size := r.m.attr(ino)
	if a.IsLink() != r.m.nodes[ino].link {
		r.fatalf("%s: inode %d mode %o, a symbolic link in the model: %v", what, ino, a.Mode, r.m.nodes[ino].link)
	}
	if a.Ino != ino || a.IsDir() != r.m.nodes[ino].dir || a.Nlink != nlink || a.Size != size {
		r.fatalf("%s: attributes ino %d dir %v nlink %d size %d, want ino %d dir %v nlink %d size %d",
			what, a.Ino, a.IsDir(), a.Nlink, a.Size, ino, r.m.nodes[ino].dir, nlink, size)
	}
}

func (r *modelRun) opStat() {
	ino := r.pick(r.rng.IntN(2) == 0)
	what := fmt.Sprintf("stat(%d)", ino)
	a, err := r.s.Stat(ino)
	r.logf("%s = %v", what, err)
	want := syscall.Errno(0)
	if r.m.nodes[ino] == nil {
		want = syscall.ENOENT
	}
	r.check(what, err, want)
	if err == nil {
		r.compareAttr(what, ino, a)
	}
}

func (r *modelRun) opReadDir() {
	dir := r.pick(true)
	page := 1 + r.rng.IntN(6)
	what := fmt.Sprintf("readdir(%d, pages of %d)", dir, page)
	r.logf("%s", what)
	es, err := r.listAll(dir, page)
	r.check(what, err, r.m.dirErr(dir))
	if err == nil {
		r.compareListing(what, dir, es)
	}
}

// listAll lists dir in pages, checking that cookies only grow.
func (r *modelRun) listAll(dir Ino, page int) ([]DirEntry, error) {
	var out []DirEntry
	cookie := uint64(0)
	for {
		es, err := r.s.ReadDir(dir, cookie, page)
		if err != nil {
			return nil, err
		}
		if len(es) > page {
			r.fatalf("readdir(%d): %d entries, asked for %d", dir, len(es), page)
		}
		for _, e := range es {
			if e.Cookie <= cookie {
				r.fatalf("readdir(%d): cookie %d after %d", dir, e.Cookie, cookie)
			}
			cookie = e.Cookie
		}
		out = append(out, es...)
		if len(es) < page {
			return out, nil
		}
	}
}

func (r *modelRun) compareListing(what string, dir Ino, got []DirEntry) {
	r.t.Helper()
	want := r.m.listing(dir)
	strip := func(es []DirEntry) []string {
		out := make([]string, len(es))
		for i, e := range es {
			out[i] = fmt.Sprintf("%.12q→%d/%d", e.Name, e.Ino, e.Type)
		}
		return out
	}
	if g, w := strip(got), strip(want); !slices.Equal(g, w) {
		r.fatalf("%s: listing\n%v\nwant\n%v", what, g, w)
	}
}

func (r *modelRun) opOpen() {
	ino := r.pick(false)
	n := r.m.nodes[ino]
	want := syscall.Errno(0)
	switch {
	case n == nil:
		want = syscall.ENOENT
	case n.dir:
		want = syscall.EISDIR
	case n.link:
		want = syscall.ELOOP // open(2) with O_NOFOLLOW
	}
	what := fmt.Sprintf("open(%d)", ino)
	a, err := r.s.Open(ino)
	r.logf("%s = %v", what, err)
	r.check(what, err, want)
	if err == nil {
		n.holds++
		r.compareAttr(what, ino, a)
	}
}

// opRelease releases a held file, now and then one without a hold
// (EBADF).
func (r *modelRun) opRelease() {
	var held []Ino
	for _, ino := range r.inos(false) {
		if r.m.nodes[ino].holds > 0 {
			held = append(held, ino)
		}
	}
	ino := r.pickFrom(held)
	if len(held) == 0 || r.rng.IntN(10) == 0 {
		ino = r.pick(false)
	}
	n := r.m.nodes[ino]
	want := syscall.Errno(0)
	if n == nil || n.holds == 0 {
		want = syscall.EBADF
	}
	what := fmt.Sprintf("release(%d)", ino)
	err := r.s.Release(ino)
	r.logf("%s = %v", what, err)
	r.check(what, err, want)
	if err != nil {
		return
	}
	if n.holds--; n.holds == 0 && n.nlink == 0 {
		delete(r.m.nodes, ino)
		r.m.dead[ino] = true
	}
}

func (r *modelRun) opFsync() {
	inos := r.inos(r.rng.IntN(4) == 0)
	if len(inos) == 0 {
		return
	}
	ino := r.pickFrom(inos)
	what := fmt.Sprintf("fsync(%d)", ino)
	err := r.s.Fsync(context.Background(), ino, r.rng.IntN(2) == 0)
	r.logf("%s = %v", what, err)
	r.check(what, err, 0)
}

func (r *modelRun) opSync() {
	r.logf("sync")
	if err := r.s.Sync(context.Background()); err != nil {
		r.fatalf("sync: %v", err)
	}
	r.verifyAll("after sync", false)
}

func (r *modelRun) opRemount() {
	r.logf("remount")
	if err := r.s.Close(context.Background()); err != nil {
		r.fatalf("close: %v", err)
	}
	s, err := Open(r.dev, r.opts)
	if err != nil {
		r.fatalf("open: %v", err)
	}
	r.s = s
	// The holds went with the old mount; this one freed the orphans.
	if got, want := s.OrphansFreed(), r.m.orphans(); got != want {
		r.fatalf("remount freed %d orphans, the model has %d", got, want)
	}
	r.m.dropHolds()
	r.verifyAll("after remount", true)
}

// verifyAll compares the whole tree — listings, attributes, contents —
// with the model, checks that deleted inodes stay deleted, and runs fsck.
// Without all, it reads the content of the files changed since the last
// verification and of one in four of the others.
func (r *modelRun) verifyAll(when string, all bool) {
	r.t.Helper()
	r.syncs++
	defer clear(r.changed)
	if err := r.s.Check(); err != nil {
		r.fatalf("%s: fsck: %v", when, err)
	}
	seen := map[Ino]bool{}
	var walk func(dir Ino, path string)
	walk = func(dir Ino, path string) {
		seen[dir] = true
		a, err := r.s.Stat(dir)
		if err != nil {
			r.fatalf("%s: stat %s: %v", when, path, err)
		}
		r.compareAttr(when+": stat "+path, dir, a)
		r.compareXattrs(when+": xattrs "+path, dir)
		es, err := r.listAll(dir, 1+r.rng.IntN(5))
		if err != nil {
			r.fatalf("%s: readdir %s: %v", when, path, err)
		}
		r.compareListing(when+": readdir "+path, dir, es)
		for _, e := range es {
			p := path + "/" + e.Name
			if e.Type == TypeDir {
				walk(e.Ino, p)
				continue
			}
			if seen[e.Ino] {
				continue
			}
			seen[e.Ino] = true
			a, err := r.s.Stat(e.Ino)
			if err != nil {
				r.fatalf("%s: stat %s: %v", when, p, err)
			}
			r.compareAttr(when+": stat "+p, e.Ino, a)
			r.compareXattrs(when+": xattrs "+p, e.Ino)
			if a.Blocks > (a.Size+4095)/4096*4096 {
				r.fatalf("%s: %s (inode %d) holds %d bytes past its size %d", when, p, e.Ino, a.Blocks, a.Size)
			}
			if !all && !r.changed[e.Ino] && r.rng.IntN(4) > 0 {
				continue
			}
			want := r.m.nodes[e.Ino].data
			if e.Type == TypeLink {
				if got, err := r.s.Readlink(e.Ino); err != nil || got != string(want) {
					r.fatalf("%s: target of %s (inode %d): %d bytes (%v), want %d", when, p, e.Ino, len(got), err, len(want))
				}
				continue
			}
			if cap(r.buf) < len(want)+1 {
				r.buf = make([]byte, len(want)+1)
			}
			buf := r.buf[:len(want)+1]
			n, err := r.s.Read(e.Ino, 0, buf)
			if err != nil || n != len(want) || !bytes.Equal(buf[:n], want) {
				r.fatalf("%s: content of %s (inode %d): %d bytes (%v), want %d; first difference at %d",
					when, p, e.Ino, n, err, len(want), posixFirstDiff(buf[:n], want))
			}
		}
	}
	walk(RootIno, "")
	if len(seen) != len(r.m.nodes)-r.m.orphans() {
		r.fatalf("%s: %d inodes reachable, the model has %d and %d orphans", when, len(seen), len(r.m.nodes), r.m.orphans())
	}
	// The orphans: no name leads to them; by number they are whole.
	for _, ino := range r.inos(false) {
		n := r.m.nodes[ino]
		if n.nlink != 0 {
			continue
		}
		a, err := r.s.Stat(ino)
		if err != nil {
			r.fatalf("%s: stat of orphan %d: %v", when, ino, err)
		}
		r.compareAttr(when+": stat of an orphan", ino, a)
		buf := make([]byte, len(n.data)+1)
		if got, err := r.s.Read(ino, 0, buf); err != nil || !bytes.Equal(buf[:got], n.data) {
			r.fatalf("%s: content of orphan %d: %d bytes (%v), want %d", when, ino, got, err, len(n.data))
		}
	}
	for ino := range r.m.dead {
		if _, err := r.s.Stat(ino); !errors.Is(err, syscall.ENOENT) {
			r.fatalf("%s: stat of deleted inode %d: %v", when, ino, err)
		}
	}
}

// modelOps is the default number of operations per seed.
const modelOps = 1200

func TestModel(t *testing.T) {
	seeds := []uint64{1, 2, 3, 4, 5, 6}
	if *modelSeedFlag != 0 {
		seeds = []uint64{*modelSeedFlag}
	}
	ops := modelOps
	if *modelOpsFlag > 0 {
		ops = *modelOpsFlag
	}
	for _, seed := range seeds {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			t.Parallel()
			modelRunSeed(t, seed, ops)
		})
	}
}

func modelRunSeed(t *testing.T, seed uint64, ops int) {
	rng := rand.New(rand.NewPCG(seed, seed*0x9e3779b97f4a7c15))
	r := &modelRun{t: t, seed: seed, rng: rng, m: newModelFS(), maxFile: 3 << 19, outcomes: map[syscall.Errno]int{}, changed: map[Ino]bool{}}
	// Options vary with the seed: a small dirty budget makes background
	// writeback interleave with the operations; a small cache budget
	// makes inodes (with nodes and pages) leave memory and come back from
	// the tree.
	r.opts = Options{Logger: testLogger}
	if seed%2 == 1 {
		r.opts.DirtyBytes = 1 << 20
	}
	if seed%3 == 0 {
		r.opts.CacheBytes = 256 << 10
	}
	// Node size 4096 makes the trees deep; one seed in four uses the
	// default size, whose inline extents are larger.
	nodeSize := 4096
	r.targetMax = 965
	if seed%4 == 0 {
		nodeSize, r.targetMax = 0, 4037
	}
	r.dev = memdev.New(256 << 20)
	if err := Mkfs(r.dev, MkfsOptions{NodeSize: nodeSize}); err != nil {
		t.Fatal(err)
	}
	s, err := Open(r.dev, r.opts)
	if err != nil {
		t.Fatal(err)
	}
	r.s = s
	defer func() {
		if r.s != nil && !t.Failed() {
			closeCheck(t, r.s)
		}
	}()
	type opKind struct {
		weight int
		run    func()
	}
	kinds := []opKind{
		{12, func() { r.opMake(false) }},
		{6, func() { r.opMake(true) }},
		{20, r.opWrite},
		{7, r.opTruncate},
		{5, r.opLink},
		{8, func() { r.opRemove(false) }},
		{4, func() { r.opRemove(true) }},
		{10, r.opRename},
		{4, r.opRename2},
		{4, r.opFallocate},
		{4, r.opReadDir},
		{10, r.opRead},
		{5, r.opLookup},
		{4, r.opStat},
		{1, r.opFsync},
		{6, r.opOpen},
		{3, r.opRelease},
		{3, r.opSymlink},
		{2, r.opReadlink},
		{3, r.opSetXattr},
		{1, r.opRemoveXattr},
		{1, r.opGetXattr},
	}
	total := 0
	for _, k := range kinds {
		total += k.weight
	}
	for range ops {
		switch {
		case rng.IntN(150) == 0:
			r.opRemount()
			continue
		case rng.IntN(80) == 0:
			r.opSync()
			continue
		}
		w := rng.IntN(total)
		for _, k := range kinds {
			if w < k.weight {
				k.run()
				break
			}
			w -= k.weight
		}
	}
	r.opSync()
	r.opRemount()
	files, dirs, bytes := 0, 0, 0
	for _, n := range r.m.nodes {
		if n.dir {
			dirs++
		} else {
			files++
			bytes += len(n.data)
		}
	}
	var outs []string
	for _, e := range slices.Sorted(func(yield func(syscall.Errno) bool) {
		for e := range r.outcomes {
			if !yield(e) {
				return
			}
		}
	}) {
		outs = append(outs, fmt.Sprintf("%d×%s", r.outcomes[e], modelErrnoName(e)))
	}
	t.Logf("%d operations, %d syncs and remounts, %d orphans made; at the end %d files (%d bytes), %d directories; results: %s",
		len(r.log), r.syncs, r.m.orphansMade, files, bytes, dirs, strings.Join(outs, " "))
}

func modelErrnoName(e syscall.Errno) string {
	names := map[syscall.Errno]string{0: "ok", syscall.ENOENT: "ENOENT", syscall.EEXIST: "EEXIST",
		syscall.ENOTDIR: "ENOTDIR", syscall.EISDIR: "EISDIR", syscall.ENOTEMPTY: "ENOTEMPTY",
		syscall.EINVAL: "EINVAL", syscall.ENAMETOOLONG: "ENAMETOOLONG", syscall.EPERM: "EPERM", syscall.EBADF: "EBADF",
		syscall.ENODATA: "ENODATA", syscall.ERANGE: "ERANGE", syscall.EOPNOTSUPP: "EOPNOTSUPP", syscall.ENOSPC: "ENOSPC"}
	if n, ok := names[e]; ok {
		return n
	}
	return fmt.Sprint(int(e))
}

// A write that needs more of the dirty budget than the background
// threshold leaves free must not wait for the dirty data under the
// threshold to expire: the flusher writes back for a writer that waits.
func TestModel_WriteWaitsNotForExpiry(t *testing.T) {
	d := newTestDevice(t, 64<<20)
	s := openTest(t, d, Options{DirtyBytes: 1 << 20, DirtyExpire: time.Hour})
	a, _ := s.Create(RootIno, "a", 0o644)
	b, _ := s.Create(RootIno, "b", 0o644)
	// Under the background threshold (1/4 of the budget): stays dirty.
	posixWrite(t, s, a.Ino, 0, make([]byte, 100<<10))
	done := make(chan error, 1)
	go func() {
		_, err := s.Write(b.Ino, 0, make([]byte, 1<<20))
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("a 1 MiB write with a 1 MiB dirty budget still waits after 20 s")
	}
	closeCheck(t, s)
}
