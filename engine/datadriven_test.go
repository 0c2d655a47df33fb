package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"

	"ustore/dev"
	"ustore/dev/memdev"
)

// TestDataDriven runs the stories in testdata/, each on a fresh engine: a
// 32 MiB memdev formatted with 4 KiB nodes (so a few dozen items make a
// multi-level tree), tree 300 created and committed in generation 2.
// Expectations regenerate with -rewrite and are read in review.
//
// Keys are test keys: N stands for (N 250 0), and an item's payload is
// testValue(N, size) — its first 8 bytes are N, little-endian. A mutation
// joins the running transaction (starting one if none runs) and keeps its
// handle open until commit, remount or crash, so consecutive commands
// change one generation.
//
//	reset [node-size=N]         a fresh engine as above
//	insert key=N size=S         InsertItem, one by one: key N, or keys A,
//	insert keys=A..B size=S     A+K, ... up to B (A > B counts down); with
//	  [step=K]                  input lines, each line's key=/keys= size=
//	batch keys=A..B size=S      one ItemBatch (NewItemBatch + InsertItems)
//	delete key=N                DeleteItem
//	delete-range from=N to=M    DeleteRange, printing how many it deleted
//	update key=N                UpdateItem: flip every payload bit
//	resize key=N size=S         ResizeItem (or keys=A..B: each in turn,
//	                            up to the first error)
//	truncate key=N size=S       TruncateItem (or keys=A..B, as resize)
//	lookup key=N                the payload (up to 64 bytes shown)
//	search key=N [cow]          SearchSlot: found or the insertion slot, the
//	  [ins-len=L]               path; with cow, the counters it moved
//	commit                      Engine.Commit; the committed generation
//	remount                     Close, then Mount on the same device
//	crash keep=none|all|torn    power cut on the device, then Mount; see
//	  [at=POINT]                crash below
//	print [shape] [min-level=L] the tree without bytenrs (shape: one line
//	                            per leaf instead of one per item; min-level:
//	                            one line per node at level L, nothing below)
//	stats                       the tree's counters moved since the last
//	                            stats (or mount)
//	fsck                        Check: "clean" or the problems
//	leaf-push on|off            whether a full leaf tries its siblings
//	                            before it splits (push.go; on by default,
//	                            as in Mount; kept across reset and remount)
//
// Mutations print "ok" or "error: " and the error.
func TestDataDriven(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		h := &ddHarness{t: t}
		h.reset(4096)
		defer h.close()
		datadriven.RunTest(t, path, func(t *testing.T, td *datadriven.TestData) string {
			return h.run(t, td)
		})
	})
}

// TestTree_Dump_Bytenrs checks the debugging dump, which the testdata
// files leave out: every node's bytenr and every pointer's target.
func TestTree_Dump_Bytenrs(t *testing.T) {
	e, _ := newTestEngine(t, ddDeviceBytes, 4096)
	tr, err := e.Start()
	if err != nil {
		t.Fatal(err)
	}
	tree, err := e.CreateTree(tr, testTree)
	if err != nil {
		t.Fatal(err)
	}
	for i := uint64(0); i < 100; i++ {
		if err := tree.InsertItem(tr, testKey(i), testValue(i, 100)); err != nil {
			t.Fatal(err)
		}
	}
	tr.End()
	var b strings.Builder
	if err := tree.Dump(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	tree.rootLock.RLock()
	root := tree.root
	tree.rootLock.RUnlock()
	if root.Level() != 1 {
		t.Fatalf("root level %d, want 1", root.Level())
	}
	want := []string{fmt.Sprintf("tree %d\n  node %d level 1 gen %d items %d\n", testTree, root.bytenr, tr.ID(), root.ItemCount())}
	for i := 0; i < root.ItemCount(); i++ {
		want = append(want,
			fmt.Sprintf("    [%d] %v -> %d gen %d\n", i, root.Key(i), root.BlockPtr(i), root.PtrGeneration(i)),
			fmt.Sprintf("      leaf %d gen %d items ", root.BlockPtr(i), root.PtrGeneration(i)))
	}
	want = append(want, "        [0] (0 250 0) size 100 0000000000000000...\n")
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("dump lacks %q:\n%s", w, out)
		}
	}
	commit(t, e)
	check(t, e)
	closeEngine(t, e)
}

// ddHarness is the state of one testdata file.
type ddHarness struct {
	t     *testing.T
	d     *memdev.Device
	e     *Engine
	tr    *Trans    // the open handle, nil between transactions
	stats TreeStats // the tree's counters at the last stats (or mount)
	// noPush is leaf-push off: every engine of the file mounts without
	// leaf pushes.
	noPush bool
}

const ddDeviceBytes = 32 << 20

func (h *ddHarness) reset(nodeSize int) {
	h.close()
	h.d = memdev.New(ddDeviceBytes)
	if err := Mkfs(h.d, MkfsOptions{NodeSize: nodeSize}); err != nil {
		h.t.Fatal(err)
	}
	h.mount()
	if _, err := h.e.CreateTree(h.trans(), testTree); err != nil {
		h.t.Fatal(err)
	}
	h.endTrans()
	commit(h.t, h.e)
	h.stats = h.tree().Stats()
}

func (h *ddHarness) mount() {
	h.e = mount(h.t, h.d)
	h.e.noLeafPush = h.noPush
	if tree := h.tree(); tree != nil {
		h.stats = tree.Stats()
	} else {
		h.stats = TreeStats{}
	}
}

// close ends the file: a clean engine closes and checks clean.
func (h *ddHarness) close() {
	if h.e == nil {
		return
	}
	h.endTrans()
	closeEngine(h.t, h.e)
	check(h.t, h.e)
	h.e = nil
}

func (h *ddHarness) tree() *Tree { return h.e.Tree(testTree) }

// trans returns the open handle, joining the running transaction first if
// none is open.
func (h *ddHarness) trans() *Trans {
	if h.tr == nil {
		tr, err := h.e.Start()
		if err != nil {
			h.t.Fatalf("Start: %v", err)
		}
		h.tr = tr
	}
	return h.tr
}

func (h *ddHarness) endTrans() {
	if h.tr != nil {
		h.tr.End()
		h.tr = nil
	}
}

func (h *ddHarness) run(t *testing.T, td *datadriven.TestData) string {
	a := cmdArgs(t, td)
	switch td.Cmd {
	case "reset":
		h.reset(a.intOr("node-size", 4096))
		return "ok"
	case "insert":
		return h.insert(t, td)
	case "batch":
		return h.batch(a)
	case "delete":
		return result(h.tree().DeleteItem(h.trans(), testKey(a.uint("key"))))
	case "delete-range":
		n, err := h.tree().DeleteRange(h.trans(), testKey(a.uint("from")), testKey(a.uint("to")))
		if err != nil {
			return fmt.Sprintf("deleted %d\nerror: %v", n, err)
		}
		return fmt.Sprintf("deleted %d", n)
	case "update":
		return result(h.tree().UpdateItem(h.trans(), testKey(a.uint("key")), func(b []byte) {
			for i := range b {
				b[i] ^= 0xff
			}
		}))
	case "resize":
		for _, k := range a.keys() {
			if err := h.tree().ResizeItem(h.trans(), testKey(k), a.int("size")); err != nil {
				return fmt.Sprintf("key=%d: error: %v", k, err)
			}
		}
		return "ok"
	case "truncate":
		for _, k := range a.keys() {
			if err := h.tree().TruncateItem(h.trans(), testKey(k), a.int("size")); err != nil {
				return fmt.Sprintf("key=%d: error: %v", k, err)
			}
		}
		return "ok"
	case "lookup":
		v, err := h.tree().Lookup(testKey(a.uint("key")))
		if err != nil {
			return result(err)
		}
		return fmt.Sprintf("size %d%s", len(v), dumpPreview(v, 64))
	case "search":
		return h.search(a)
	case "commit":
		h.endTrans()
		gen, err := h.e.Commit(context.Background())
		if err != nil {
			return result(err)
		}
		return fmt.Sprintf("committed generation %d", gen)
	case "remount":
		h.endTrans()
		if err := h.e.Close(context.Background()); err != nil {
			return result(err)
		}
		h.mount()
		return fmt.Sprintf("mounted generation %d", h.e.sb.Generation)
	case "crash":
		return h.crash(a)
	case "print":
		var b strings.Builder
		if err := h.tree().DumpWith(&b, DumpOptions{Items: !a.has("shape"), PreviewBytes: 8, MinLevel: a.intOr("min-level", 0)}); err != nil {
			return result(err)
		}
		return b.String()
	case "stats":
		s := h.tree().Stats()
		was := h.stats
		h.stats = s
		out := fmt.Sprintf("leaf-splits=%d node-splits=%d merges=%d rebalances=%d\ncows=%d parent-write-locks=%d restarts=%d items-inserted=%d",
			s.LeafSplits-was.LeafSplits, s.NodeSplits-was.NodeSplits, s.Merges-was.Merges, s.Rebalances-was.Rebalances,
			s.CoWs-was.CoWs, s.ParentWriteLocks-was.ParentWriteLocks, s.Restarts-was.Restarts, s.ItemsInserted-was.ItemsInserted)
		if n := s.LeafPushes - was.LeafPushes; n > 0 {
			out += fmt.Sprintf("\nleaf-pushes=%d", n)
		}
		return out
	case "fsck":
		return h.fsck()
	case "leaf-push":
		switch {
		case a.has("on"):
			h.noPush = false
		case a.has("off"):
			h.noPush = true
		default:
			a.fail("leaf-push: on or off")
		}
		h.e.noLeafPush = h.noPush
		return "ok"
	}
	td.Fatalf(t, "unknown command %q", td.Cmd)
	return ""
}

// insert inserts items one by one, each line (or the command's own
// arguments) a key or a range of keys.
func (h *ddHarness) insert(t *testing.T, td *datadriven.TestData) string {
	lines := []ddArgs{cmdArgs(t, td)}
	if td.Input != "" {
		lines = lines[:0]
		for _, line := range strings.Split(td.Input, "\n") {
			lines = append(lines, lineArgs(t, td, line))
		}
	}
	var out []string
	for _, a := range lines {
		size := a.int("size")
		for _, k := range a.keys() {
			if err := h.tree().InsertItem(h.trans(), testKey(k), testValue(k, size)); err != nil {
				out = append(out, fmt.Sprintf("key=%d: error: %v", k, err))
			}
		}
	}
	if len(out) == 0 {
		return "ok"
	}
	return strings.Join(out, "\n")
}

func (h *ddHarness) batch(a ddArgs) string {
	size := a.int("size")
	var keys []Key
	var payloads [][]byte
	for _, k := range a.keys() {
		keys = append(keys, testKey(k))
		payloads = append(payloads, testValue(k, size))
	}
	b, err := NewItemBatch(keys, payloads)
	if err != nil {
		return result(err)
	}
	return result(h.tree().InsertItems(h.trans(), b))
}

// search runs one SearchSlot and describes its path: per level from the
// root down, the slot and the node's generation.
func (h *ddHarness) search(a ddArgs) string {
	cow := a.has("cow")
	insLen := a.intOr("ins-len", 0)
	var tr *Trans
	if cow {
		tr = h.trans()
	}
	before := h.tree().Stats()
	var p Path
	found, err := h.tree().SearchSlot(tr, testKey(a.uint("key")), &p, insLen, cow)
	if err != nil {
		p.Release()
		return result(err)
	}
	var b strings.Builder
	leaf, slot := p.Leaf()
	if found {
		fmt.Fprintf(&b, "found: slot %d of %d items\n", slot, leaf.ItemCount())
	} else {
		fmt.Fprintf(&b, "not found: insertion slot %d of %d items\n", slot, leaf.ItemCount())
	}
	b.WriteString("path:")
	for l := maxLevel; l >= 0; l-- {
		if eb := p.Nodes[l]; eb != nil {
			fmt.Fprintf(&b, " [level %d slot %d gen %d]", l, p.Slots[l], eb.Generation())
		}
	}
	p.Release()
	if cow {
		s := h.tree().Stats()
		fmt.Fprintf(&b, "\ncows +%d, parent-write-locks +%d, restarts +%d, leaf-splits +%d",
			s.CoWs-before.CoWs, s.ParentWriteLocks-before.ParentWriteLocks, s.Restarts-before.Restarts, s.LeafSplits-before.LeafSplits)
	}
	return b.String()
}

// crash cuts the power at a point of the device's history, keeping the
// unflushed writes that keep says — none, all, or torn: all, but the
// newest loses its first dev.TornSize piece — and mounts what is left. The engine that ran is closed afterwards; its final
// commit goes to the abandoned device. The points, in the last commit (which
// writes its nodes, flushes, writes both copies of the superblock — the
// primary, then the mirror — and flushes):
//
//	now                  after the last operation (the default)
//	nodes-written        after the last node write, before the first flush
//	nodes-flushed        after that flush, before the superblock writes
//	super-written        after both superblock writes, before their flush
func (h *ddHarness) crash(a ddArgs) string {
	seq := h.d.Seq()
	if at := a.strOr("at", "now"); at != "now" {
		ops := h.d.Ops()
		isSuper := func(op memdev.Op) bool {
			return op.Kind == memdev.OpWrite && slices.Contains(superCopyOffsets[:], uint64(op.Off))
		}
		last := -1 // the last superblock copy write
		for i := len(ops) - 1; i >= 0; i-- {
			if isSuper(ops[i]) {
				last = i
				break
			}
		}
		first := last // the first copy write of the same stage
		for first > 0 && isSuper(ops[first-1]) {
			first--
		}
		if last < 0 || first < 2 || ops[first-1].Kind != memdev.OpFlush || ops[first-2].Kind != memdev.OpWrite {
			return "error: no commit in the device's history"
		}
		switch at {
		case "super-written":
			seq = ops[last].Seq
		case "nodes-flushed":
			seq = ops[first-1].Seq
		case "nodes-written":
			seq = ops[first-2].Seq
		default:
			a.fail("crash: unknown point %q", at)
		}
	}
	unflushed := h.d.UnflushedAt(seq)
	var policy memdev.CrashPolicy
	kept := 0
	switch keep := a.str("keep"); keep {
	case "none":
		policy = memdev.KeepNone()
	case "all":
		policy = memdev.KeepAll()
		kept = len(unflushed)
	case "torn":
		if len(unflushed) == 0 {
			return "error: no unflushed write to tear"
		}
		last := len(unflushed) - 1
		policy = memdev.CrashPolicy{
			Keep: func(i int, _ memdev.Write) bool { return i < last },
			Tear: &memdev.Tear{Index: last, Pieces: memdev.MaskPieces(^uint64(1), unflushed[last].Pieces())},
		}
		kept = last
	default:
		a.fail("crash: keep=%s: want none, all or torn", keep)
	}
	crashed := h.d.CrashAt(seq, policy)
	var b strings.Builder
	fmt.Fprintf(&b, "unflushed writes %d, kept %d", len(unflushed), kept)
	if a.strOr("keep", "") == "torn" {
		fmt.Fprintf(&b, ", and the newest torn: its first %d bytes lost", dev.TornSize)
	}
	h.endTrans()
	if err := h.e.Close(context.Background()); err != nil {
		fmt.Fprintf(&b, "\nclosing the engine that crashed: %v", err)
	}
	h.d = crashed
	e, err := Mount(h.d, Options{Logger: quiet(), CommitInterval: 60e9, NoLeafPush: h.noPush})
	if err != nil {
		h.e = nil
		a.fail("mount after the crash: %v", err)
	}
	h.e = e
	h.stats = h.tree().Stats()
	fmt.Fprintf(&b, "\nmounted generation %d", h.e.sb.Generation)
	return b.String()
}

// fsck checks the whole engine when no transaction is open; with one open
// (uncommitted changes, so the space accounting cannot match yet) it
// checks the shape of every tree only.
func (h *ddHarness) fsck() string {
	if h.tr == nil {
		r := Check(h.e)
		var b strings.Builder
		for _, w := range r.Warnings {
			fmt.Fprintf(&b, "warning: %v\n", w)
		}
		if err := r.Err(); err != nil {
			return b.String() + "problems:\n" + err.Error()
		}
		return b.String() + "clean"
	}
	rep := &CheckReport{}
	refs := map[Bytenr]uint64{}
	for _, id := range []uint64{RootTreeID, FSTreeID, CsumTreeID, FreeSpaceTreeID, testTree} {
		tree := h.e.Tree(id)
		tree.rootLock.RLock()
		root := tree.root
		tree.rootLock.RUnlock()
		h.e.checkNode(tree, root, true, MinKey, MaxKey, false, refs, rep)
	}
	if err := rep.Err(); err != nil {
		return "problems:\n" + err.Error()
	}
	return fmt.Sprintf("shape clean (transaction %d open: space not checked)", h.tr.ID())
}

func result(err error) string {
	if err != nil {
		return "error: " + err.Error()
	}
	return "ok"
}

// ddArgs are a command's key=value arguments, or one input line's; fail
// ends the test at the command's position in the file.
type ddArgs struct {
	vals map[string]string
	cmd  string
	fail func(format string, args ...any)
}

func cmdArgs(t *testing.T, td *datadriven.TestData) ddArgs {
	a := newArgs(t, td)
	for _, arg := range td.CmdArgs {
		a.vals[arg.Key] = strings.Join(arg.Vals, ",")
	}
	return a
}

func lineArgs(t *testing.T, td *datadriven.TestData, line string) ddArgs {
	a := newArgs(t, td)
	for _, f := range strings.Fields(line) {
		k, v, _ := strings.Cut(f, "=")
		if _, dup := a.vals[k]; dup {
			a.fail("line %q: %s given twice", line, k)
		}
		a.vals[k] = v
	}
	return a
}

func newArgs(t *testing.T, td *datadriven.TestData) ddArgs {
	return ddArgs{vals: map[string]string{}, cmd: td.Cmd, fail: func(format string, args ...any) {
		t.Helper()
		td.Fatalf(t, format, args...)
	}}
}

func (a ddArgs) has(k string) bool { _, ok := a.vals[k]; return ok }

func (a ddArgs) str(k string) string {
	v, ok := a.vals[k]
	if !ok {
		a.fail("%s: missing argument %s", a.cmd, k)
	}
	return v
}

func (a ddArgs) strOr(k, def string) string {
	if v, ok := a.vals[k]; ok {
		return v
	}
	return def
}

func (a ddArgs) uint(k string) uint64 {
	n, err := strconv.ParseUint(a.str(k), 10, 64)
	if err != nil {
		a.fail("%s: %s: %v", a.cmd, k, err)
	}
	return n
}

func (a ddArgs) int(k string) int {
	n, err := strconv.Atoi(a.str(k))
	if err != nil {
		a.fail("%s: %s: %v", a.cmd, k, err)
	}
	return n
}

func (a ddArgs) intOr(k string, def int) int {
	if !a.has(k) {
		return def
	}
	return a.int(k)
}

// keys returns key=N as one key, or keys=A..B [step=K]: A, A±K, ... as far
// as B, counting down when A > B.
func (a ddArgs) keys() []uint64 {
	if a.has("key") {
		return []uint64{a.uint("key")}
	}
	lo, hi, ok := strings.Cut(a.str("keys"), "..")
	from, err1 := strconv.ParseUint(lo, 10, 64)
	to, err2 := strconv.ParseUint(hi, 10, 64)
	if !ok || errors.Join(err1, err2) != nil {
		a.fail("%s: keys=%s: want A..B", a.cmd, a.vals["keys"])
	}
	step := uint64(a.intOr("step", 1))
	if step == 0 {
		a.fail("%s: step=0", a.cmd)
	}
	var ks []uint64
	if from <= to {
		for k := from; k <= to && k >= from; k += step {
			ks = append(ks, k)
		}
	} else {
		for k := from; k >= to && k <= from; k -= step {
			ks = append(ks, k)
		}
	}
	return ks
}
