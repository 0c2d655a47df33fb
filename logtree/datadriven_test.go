package logtree_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"golang.org/x/sys/unix"

	"ustore/dev/memdev"
	"ustore/store"
)

// TestDataDriven runs the trouble cases in testdata/: each file a set of
// scripts, each script a workload followed by a power cut and what must
// hold after the log's replay — btrfs's directory trouble cases
// (fs/btrfs/tree-log.c) and the fsync bugs CrashMonkey and ACE found, each
// case naming its source. Expectations regenerate with -rewrite and are
// read in review: a crash must keep everything a completed fsync, fdatasync
// or sync made durable, exactly, and leave only a state the workload
// passed through.
//
// testdata/known_bugs holds cases the store fails today, with the correct
// output written by hand; it runs only with LOGTREE_KNOWN_BUGS=1 (never
// regenerate it with -rewrite). testdata/bulk is skipped under the race
// detector (-race), which makes its thousands of operations too slow.
//
// Paths are absolute in the store ("/a/b"); "@h" names the inode an open
// command remembered as h, whatever its names are now. Every mutation
// prints "ok" or "error: ERRNO (text)" (an EIO with its cause).
//
//	reset                       a fresh store: Mkfs with 4 KiB nodes on a 64
//	                            MiB memdev, Open with a 5-minute commit
//	                            interval and dirty-data expiry, so that
//	                            nothing commits or is written back unless
//	                            the script says so
//	mkdir p | create p          a directory, an empty file (mode 0755, 0644);
//	  [n=N [step=K]]            with n, each of fmt.Sprintf(p, i) for i = 0,
//	                            K, 2K, ... below N (unlink and rmdir too)
//	write p off=N len=N         buffered write of len bytes of byte C (a
//	  [byte=C]                  letter; default: the next of a, b, c, ...);
//	                            N may end in K (KiB) or M (MiB)
//	truncate p size=N           set the size
//	chmod p mode=0NNN           set the permission bits
//	link src dst                a new name dst for src's inode
//	symlink target p            a symbolic link p to target (ln -s target p)
//	unlink p | rmdir p          remove a file's name, an empty directory
//	rename src dst              rename(2)
//	open p as=h                 remember p's inode as @h
//	fsync p | fdatasync p       Store.Fsync; prints how it was answered:
//	                            logged, in-log, committed-already, or
//	                            commit (fallback REASON)
//	sync                        Store.Sync: write back everything, commit
//	commit                      a transaction commit alone (no writeback)
//	crash                       power cut keeping no unflushed write, then
//	                            Open on what is left (the log's replay):
//	                            prints whether a log was applied, and fsck
//	ls [p]                      the tree under p (default /), names sorted:
//	                            type, size, nlink, and #k — the k-th inode
//	                            met in the walk, so that hard links show as
//	                            one inode without inode numbers; a link's
//	                            target after "->"
//	ls p brief                  directory p: how many files and directories,
//	                            and its names with numbered runs collapsed
//	cat p                       size and content as runs: a*4096 NUL*12
//	stat p                      type, size, nlink, permission bits, bytes
//	                            allocated
//	setxattr p NAME value=V     Store.SetXattr (flags: XattrCreate,
//	  [flags=create|replace]    XattrReplace)
//	rmxattr p NAME              Store.RemoveXattr
//	xattrs p                    p's extended attributes, sorted: name="value"
//	stats                       the fsync counters since the store opened
func TestDataDriven(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		switch filepath.Base(path) {
		case "known_bugs":
			if os.Getenv("LOGTREE_KNOWN_BUGS") != "1" {
				t.Skip("cases the store fails today; run with LOGTREE_KNOWN_BUGS=1")
			}
		case "bulk":
			if raceEnabled {
				t.Skip("thousands of namespace operations: too slow under the race detector")
			}
		}
		h := &harness{t: t}
		defer h.close()
		datadriven.RunTest(t, path, func(t *testing.T, td *datadriven.TestData) string {
			return h.run(t, td)
		})
	})
}

const (
	deviceBytes = 64 << 20
	nodeSize    = 4096
	// walkDepthMax bounds ls's recursion; the scripts' trees are shallow.
	walkDepthMax = 16
	// runsMax bounds the runs cat prints.
	runsMax = 16
)

var storeOptions = store.Options{
	CommitInterval: 5 * time.Minute,
	DirtyExpire:    5 * time.Minute,
	Logger:         slog.New(slog.NewTextHandler(io.Discard, nil)),
}

// harness is the state of one testdata file: the store, its device, the
// inodes open remembered and the next default write byte.
type harness struct {
	t       *testing.T
	d       *memdev.Device
	s       *store.Store
	handles map[string]store.Ino
	writes  int
}

func (h *harness) run(t *testing.T, td *datadriven.TestData) string {
	a := parseArgs(t, td)
	if td.Cmd == "reset" {
		h.reset()
		return "ok"
	}
	if h.s == nil {
		td.Fatalf(t, "%s: no store (reset first; or the last mount failed)", td.Cmd)
	}
	ctx := context.Background()
	switch td.Cmd {
	case "mkdir", "create":
		return h.each(a, func(p string) error {
			dir, name, err := h.s.ResolveParent(p)
			if err == nil && td.Cmd == "mkdir" {
				_, err = h.s.Mkdir(dir.Ino, name, 0o755)
			} else if err == nil {
				_, err = h.s.Create(dir.Ino, name, 0o644)
			}
			return err
		})
	case "write":
		return h.write(a)
	case "truncate":
		return h.withIno(a.pos(0), func(ino store.Ino) error { return h.s.Truncate(ino, a.size("size")) })
	case "chmod":
		mode, err := strconv.ParseUint(a.str("mode"), 8, 32)
		if err != nil {
			a.fail("chmod: mode: %v", err)
		}
		m := uint32(mode)
		return h.withIno(a.pos(0), func(ino store.Ino) error {
			_, err := h.s.SetAttr(ino, store.SetAttr{Mode: &m})
			return err
		})
	case "link":
		return h.withIno(a.pos(0), func(ino store.Ino) error {
			dir, name, err := h.s.ResolveParent(a.pos(1))
			if err == nil {
				_, err = h.s.Link(ino, dir.Ino, name)
			}
			return err
		})
	case "symlink":
		dir, name, err := h.s.ResolveParent(a.pos(1))
		if err == nil {
			_, err = h.s.Symlink(dir.Ino, name, a.pos(0))
		}
		return result(err)
	case "unlink", "rmdir":
		return h.each(a, func(p string) error {
			dir, name, err := h.s.ResolveParent(p)
			if err == nil && td.Cmd == "unlink" {
				err = h.s.Unlink(dir.Ino, name)
			} else if err == nil {
				err = h.s.Rmdir(dir.Ino, name)
			}
			return err
		})
	case "rename":
		sd, sn, err := h.s.ResolveParent(a.pos(0))
		if err != nil {
			return result(err)
		}
		dd, dn, err := h.s.ResolveParent(a.pos(1))
		if err == nil {
			err = h.s.Rename(sd.Ino, sn, dd.Ino, dn)
		}
		return result(err)
	case "open":
		ino, err := h.ino(a.pos(0))
		if err == nil {
			h.handles[a.str("as")] = ino
		}
		return result(err)
	case "fsync", "fdatasync":
		ino, err := h.ino(a.pos(0))
		if err != nil {
			return result(err)
		}
		before := h.s.Stats()
		if err := h.s.Fsync(ctx, ino, td.Cmd == "fdatasync"); err != nil {
			return result(err)
		}
		return fsyncOutcome(before, h.s.Stats())
	case "sync":
		return result(h.s.Sync(ctx))
	case "commit":
		_, err := h.s.Engine().Commit(ctx)
		return result(err)
	case "crash":
		return h.crash()
	case "ls":
		p := "/"
		if len(a.positional) > 0 {
			p = a.pos(0)
		}
		if len(a.positional) > 1 && a.pos(1) == "brief" {
			return h.lsBrief(p)
		}
		return h.ls(p)
	case "cat":
		return h.cat(a.pos(0))
	case "stat":
		ino, err := h.ino(a.pos(0))
		if err != nil {
			return result(err)
		}
		at, err := h.s.Stat(ino)
		if err != nil {
			return result(err)
		}
		return fmt.Sprintf("%s size=%d nlink=%d mode=%04o allocated=%d", kind(at), at.Size, at.Nlink, at.Mode&store.ModePerm, at.Blocks)
	case "setxattr":
		var flags uint32
		if a.has("flags") {
			switch a.str("flags") {
			case "create":
				flags = store.XattrCreate
			case "replace":
				flags = store.XattrReplace
			default:
				a.fail("setxattr: flags=%q: want create or replace", a.str("flags"))
			}
		}
		return h.withIno(a.pos(0), func(ino store.Ino) error {
			return h.s.SetXattr(ino, a.pos(1), []byte(a.str("value")), flags)
		})
	case "rmxattr":
		return h.withIno(a.pos(0), func(ino store.Ino) error { return h.s.RemoveXattr(ino, a.pos(1)) })
	case "xattrs":
		return h.xattrs(a.pos(0))
	case "stats":
		st := h.s.Stats()
		return fmt.Sprintf("logged=%d in-log=%d committed-already=%d commit=%d fallbacks=%s",
			st.FsyncLogged, st.FsyncInLog, st.FsyncCommitted, st.FsyncCommit, fallbacks(st.FsyncFallbacks))
	}
	td.Fatalf(t, "unknown command %q", td.Cmd)
	return ""
}

// reset replaces the store with a fresh one (the old one is checked and
// closed).
func (h *harness) reset() {
	h.close()
	h.d = memdev.New(deviceBytes)
	if err := store.Mkfs(h.d, store.MkfsOptions{NodeSize: nodeSize}); err != nil {
		h.t.Fatalf("mkfs: %v", err)
	}
	s, err := store.Open(h.d, storeOptions)
	if err != nil {
		h.t.Fatalf("open: %v", err)
	}
	h.s, h.handles, h.writes = s, map[string]store.Ino{}, 0
}

// close syncs, checks and closes the store: every script ends clean.
func (h *harness) close() {
	if h.s == nil {
		return
	}
	ctx := context.Background()
	if err := h.s.Sync(ctx); err != nil {
		h.t.Errorf("sync at the end: %v", err)
	}
	if err := h.s.Check(); err != nil {
		h.t.Errorf("fsck at the end: %v", err)
	}
	if err := h.s.Close(ctx); err != nil {
		h.t.Errorf("close at the end: %v", err)
	}
	h.s = nil
}

// crash cuts the power now, keeping none of the unflushed writes, and
// mounts what is left. The store that ran is closed afterwards; its final
// commit goes to the abandoned device.
func (h *harness) crash() string {
	crashed := h.d.Crash(memdev.KeepNone())
	old := h.s
	h.s = nil
	_ = old.Close(context.Background()) // its device is abandoned
	h.d = crashed
	s, err := store.Open(crashed, storeOptions)
	if err != nil {
		return fmt.Sprintf("mount: error: %v", err)
	}
	h.s, h.handles, h.writes = s, map[string]store.Ino{}, 0
	var b strings.Builder
	switch rep := s.Replay(); {
	case !rep.Found:
		b.WriteString("replay: no log")
	case rep.Applied:
		b.WriteString("replay: log applied")
	default:
		fmt.Fprintf(&b, "replay: log NOT applied: %v", rep.Lost)
	}
	if err := s.Check(); err != nil {
		fmt.Fprintf(&b, "\nfsck: %v", err)
	} else {
		b.WriteString("\nfsck: clean")
	}
	return b.String()
}

// ino resolves a path or an @handle.
func (h *harness) ino(p string) (store.Ino, error) {
	if name, ok := strings.CutPrefix(p, "@"); ok {
		ino, ok := h.handles[name]
		if !ok {
			h.t.Fatalf("no handle @%s", name)
		}
		return ino, nil
	}
	at, err := h.s.Resolve(p)
	return at.Ino, err
}

// each runs f on path p, or with n=N [step=K] on fmt.Sprintf(p, i) for i =
// 0, K, 2K, ... below N, stopping at the first error.
func (h *harness) each(a args, f func(p string) error) string {
	p := a.pos(0)
	if !a.has("n") {
		return result(f(p))
	}
	step := uint64(1)
	if a.has("step") {
		step = a.size("step")
	}
	for i := uint64(0); i < a.size("n"); i += step {
		name := fmt.Sprintf(p, i)
		if err := f(name); err != nil {
			return name + ": " + result(err)
		}
	}
	return "ok"
}

func (h *harness) withIno(p string, f func(ino store.Ino) error) string {
	ino, err := h.ino(p)
	if err == nil {
		err = f(ino)
	}
	return result(err)
}

func (h *harness) write(a args) string {
	c := byte('a' + h.writes%26)
	if a.has("byte") {
		if v := a.str("byte"); len(v) == 1 {
			c = v[0]
		} else {
			a.fail("write: byte=%q: want one character", v)
		}
	}
	h.writes++
	off, n := a.size("off"), a.size("len")
	data := make([]byte, n)
	for i := range data {
		data[i] = c
	}
	return h.withIno(a.pos(0), func(ino store.Ino) error {
		w, err := h.s.Write(ino, off, data)
		if err == nil && w != len(data) {
			err = fmt.Errorf("short write: %d of %d bytes", w, len(data))
		}
		return err
	})
}

// xattrs prints p's extended attributes, sorted by name: name=value.
func (h *harness) xattrs(p string) string {
	ino, err := h.ino(p)
	if err != nil {
		return result(err)
	}
	names, err := h.s.ListXattr(ino)
	if err != nil {
		return result(err)
	}
	slices.Sort(names)
	var b strings.Builder
	for _, n := range names {
		v, err := h.s.GetXattr(ino, n)
		if err != nil {
			return result(err)
		}
		fmt.Fprintf(&b, "%s=%q\n", n, v)
	}
	if len(names) == 0 {
		return "no attributes"
	}
	return b.String()
}

// ls prints the tree under p: one line per name, children indented.
func (h *harness) ls(p string) string {
	ino, err := h.ino(p)
	if err != nil {
		return result(err)
	}
	at, err := h.s.Stat(ino)
	if err != nil {
		return result(err)
	}
	seen := map[store.Ino]int{}
	var b strings.Builder
	h.lsLine(&b, 0, p, at, seen)
	if at.IsDir() {
		h.lsDir(&b, 1, ino, seen)
	}
	return strings.TrimRight(b.String(), "\n")
}

func (h *harness) lsLine(b *strings.Builder, depth int, name string, at store.Attr, seen map[store.Ino]int) {
	k, ok := seen[at.Ino]
	if !ok {
		k = len(seen) + 1
		seen[at.Ino] = k
	}
	target := ""
	if at.IsLink() {
		t, err := h.s.Readlink(at.Ino)
		if err != nil {
			t = result(err)
		}
		target = " -> " + t
	}
	fmt.Fprintf(b, "%s%s %s size=%d nlink=%d #%d%s\n", strings.Repeat("  ", depth), name, kind(at), at.Size, at.Nlink, k, target)
}

func (h *harness) lsDir(b *strings.Builder, depth int, dir store.Ino, seen map[store.Ino]int) {
	if depth > walkDepthMax {
		fmt.Fprintf(b, "%s... deeper than %d\n", strings.Repeat("  ", depth), walkDepthMax)
		return
	}
	var es []store.DirEntry
	for cookie := uint64(0); ; {
		page, err := h.s.ReadDir(dir, cookie, 64)
		if err != nil {
			fmt.Fprintf(b, "%s%s\n", strings.Repeat("  ", depth), result(err))
			return
		}
		es = append(es, page...)
		if len(page) < 64 {
			break
		}
		cookie = page[len(page)-1].Cookie
	}
	slices.SortFunc(es, func(x, y store.DirEntry) int { return strings.Compare(x.Name, y.Name) })
	for _, e := range es {
		at, err := h.s.Stat(e.Ino)
		if err != nil {
			fmt.Fprintf(b, "%s%s %s\n", strings.Repeat("  ", depth), e.Name, result(err))
			continue
		}
		h.lsLine(b, depth, e.Name, at, seen)
		if at.IsDir() {
			h.lsDir(b, depth+1, e.Ino, seen)
		}
	}
}

// lsBrief prints directory p's line, how many files and directories it
// holds, and its names sorted, numbered runs collapsed (f0001..f0099).
func (h *harness) lsBrief(p string) string {
	ino, err := h.ino(p)
	if err != nil {
		return result(err)
	}
	at, err := h.s.Stat(ino)
	if err != nil {
		return result(err)
	}
	var names []string
	files, dirs := 0, 0
	for cookie := uint64(0); ; {
		page, err := h.s.ReadDir(ino, cookie, 256)
		if err != nil {
			return result(err)
		}
		for _, e := range page {
			names = append(names, e.Name)
			if e.Type == store.TypeDir {
				dirs++
			} else {
				files++
			}
		}
		if len(page) < 256 {
			break
		}
		cookie = page[len(page)-1].Cookie
	}
	slices.Sort(names)
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s size=%d nlink=%d: %d files, %d dirs\n", p, kind(at), at.Size, at.Nlink, files, dirs)
	line := 0
	for _, r := range nameRuns(names) {
		if line > 0 && line+len(r) > 72 {
			b.WriteString("\n")
			line = 0
		}
		if line > 0 {
			b.WriteString(" ")
			line++
		}
		b.WriteString(r)
		line += len(r)
	}
	return strings.TrimRight(b.String(), "\n")
}

// nameRuns collapses sorted names that differ only in a trailing number of
// one width, counting up by one, into "first..last".
func nameRuns(names []string) []string {
	split := func(s string) (string, int, int) {
		i := len(s)
		for i > 0 && s[i-1] >= '0' && s[i-1] <= '9' {
			i--
		}
		n, err := strconv.Atoi(s[i:])
		if err != nil {
			return s, -1, 0
		}
		return s[:i], n, len(s) - i
	}
	var out []string
	for i := 0; i < len(names); {
		prefix, n, width := split(names[i])
		j := i + 1
		for n >= 0 && j < len(names) {
			p2, n2, w2 := split(names[j])
			if p2 != prefix || w2 != width || n2 != n+(j-i) {
				break
			}
			j++
		}
		if j-i > 1 {
			out = append(out, names[i]+".."+names[j-1])
		} else {
			out = append(out, names[i])
		}
		i = j
	}
	return out
}

// cat prints p's size and its content as runs of one byte value.
func (h *harness) cat(p string) string {
	ino, err := h.ino(p)
	if err != nil {
		return result(err)
	}
	at, err := h.s.Stat(ino)
	if err != nil {
		return result(err)
	}
	buf := make([]byte, at.Size)
	n, err := h.s.Read(ino, 0, buf)
	if err != nil && !errors.Is(err, io.EOF) {
		return result(err)
	}
	var runs []string
	for i := 0; i < n; {
		j := i
		for j < n && buf[j] == buf[i] {
			j++
		}
		if len(runs) == runsMax {
			runs = append(runs, "...")
			break
		}
		runs = append(runs, fmt.Sprintf("%s*%d", byteName(buf[i]), j-i))
		i = j
	}
	out := fmt.Sprintf("size=%d", at.Size)
	if n != len(buf) {
		out += fmt.Sprintf(" read=%d", n)
	}
	if len(runs) > 0 {
		out += " data: " + strings.Join(runs, " ")
	}
	return out
}

func byteName(c byte) string {
	if c == 0 {
		return "NUL"
	}
	if c > ' ' && c < 0x7f {
		return string(c)
	}
	return fmt.Sprintf("0x%02x", c)
}

func kind(at store.Attr) string {
	switch {
	case at.IsDir():
		return "dir"
	case at.IsLink():
		return "link"
	}
	return "file"
}

// fsyncOutcome names the counter one fsync moved.
func fsyncOutcome(was, now store.Stats) string {
	switch {
	case now.FsyncLogged > was.FsyncLogged:
		return "logged"
	case now.FsyncInLog > was.FsyncInLog:
		return "in-log"
	case now.FsyncCommitted > was.FsyncCommitted:
		return "committed-already"
	case now.FsyncCommit > was.FsyncCommit:
		for reason, n := range now.FsyncFallbacks {
			if n > was.FsyncFallbacks[reason] {
				return "commit (fallback " + reason + ")"
			}
		}
		return "commit"
	}
	return "ok (no counter moved)"
}

func fallbacks(m map[string]uint64) string {
	if len(m) == 0 {
		return "none"
	}
	var out []string
	for reason, n := range m {
		out = append(out, fmt.Sprintf("%s:%d", reason, n))
	}
	slices.Sort(out)
	return strings.Join(out, ",")
}

func result(err error) string {
	if err == nil {
		return "ok"
	}
	en := store.ErrnoOf(err)
	if en == unix.EIO {
		// Not an errno the operation chose: show the cause.
		return fmt.Sprintf("error: EIO: %v", err)
	}
	return fmt.Sprintf("error: %s (%v)", unix.ErrnoName(en), en)
}

// args are a command's arguments: positional ones (paths) in order, and
// key=value ones.
type args struct {
	positional []string
	vals       map[string]string
	cmd        string
	fail       func(format string, a ...any)
}

func parseArgs(t *testing.T, td *datadriven.TestData) args {
	a := args{vals: map[string]string{}, cmd: td.Cmd, fail: func(format string, v ...any) {
		t.Helper()
		td.Fatalf(t, format, v...)
	}}
	for _, arg := range td.CmdArgs {
		if len(arg.Vals) == 0 {
			a.positional = append(a.positional, arg.Key)
		} else {
			a.vals[arg.Key] = strings.Join(arg.Vals, ",")
		}
	}
	return a
}

func (a args) pos(i int) string {
	if i >= len(a.positional) {
		a.fail("%s: missing path argument %d", a.cmd, i+1)
	}
	return a.positional[i]
}

func (a args) has(k string) bool { _, ok := a.vals[k]; return ok }

func (a args) str(k string) string {
	v, ok := a.vals[k]
	if !ok {
		a.fail("%s: missing argument %s", a.cmd, k)
	}
	return v
}

// size parses N, NK or NM.
func (a args) size(k string) uint64 {
	v, mul := a.str(k), uint64(1)
	switch {
	case strings.HasSuffix(v, "K"):
		v, mul = v[:len(v)-1], 1<<10
	case strings.HasSuffix(v, "M"):
		v, mul = v[:len(v)-1], 1<<20
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		a.fail("%s: %s: %v", a.cmd, k, err)
	}
	return n * mul
}
