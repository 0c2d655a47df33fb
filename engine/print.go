package engine

import (
	"bufio"
	"encoding/hex"
	"fmt"
	"io"
	"strings"
)

// DumpOptions choose what Tree.DumpWith prints.
type DumpOptions struct {
	// Bytenrs prints each node's block number and each pointer's target.
	// They follow the allocator's choices, so tests that read dumps leave
	// them out: shapes and generations say what a test means, and do not
	// churn when allocation changes.
	Bytenrs bool
	// Items lists every item of a leaf; without it a leaf is one line with
	// its first and last keys.
	Items bool
	// PreviewBytes is how much of each payload an item line shows, in hex
	// (and quoted when it is all printable ASCII); 0 shows none.
	PreviewBytes int
	// MinLevel stops the dump above the leaves: an internal node at
	// MinLevel is one line with its first and last keys, and nothing below
	// it is printed. 0 prints every level.
	MinLevel int
}

// Dump writes the tree for debugging: every option on, 8 bytes of each
// payload.
func (t *Tree) Dump(w io.Writer) error {
	return t.DumpWith(w, DumpOptions{Bytenrs: true, Items: true, PreviewBytes: 8})
}

// DumpWith writes one line per node, indented by depth, each internal node
// followed by its pointers, each pointer by its child's subtree:
//
//	tree 300
//	  node 1064960 level 1 gen 7 items 2
//	    [0] (0 0 0) -> 1069056 gen 7
//	      leaf 1069056 gen 7 items 2 used 74 free 3958
//	        [0] (5 250 0) size 12 0500000000000000...
//	        [1] (6 250 0) size 12 0600000000000000...
//	    [1] (7 250 0) -> 1073152 gen 6
//	      leaf 1073152 gen 6 items 1 used 37 free 3995
//	        [0] (7 250 0) size 12 0700000000000000...
//
// Each node is read-locked while it and its subtree are written, taken
// top-down as a search takes them; a dump of a tree that changes meanwhile
// is consistent per node, not as a whole, so callers dump a quiescent tree.
// The recursion is bounded by the root's level, at most maxLevel.
func (t *Tree) DumpWith(w io.Writer, o DumpOptions) error {
	bw := bufio.NewWriter(w)
	t.rootLock.RLock()
	root := t.root
	root.lock.RLock()
	t.rootLock.RUnlock()
	fmt.Fprintf(bw, "tree %d\n", t.id)
	err := t.dumpNode(bw, root, root.Level(), 1, o)
	root.lock.RUnlock()
	if ferr := bw.Flush(); err == nil {
		err = ferr
	}
	return err
}

// dumpNode writes eb, which the caller has read-locked and expects at
// level, and its subtree.
func (t *Tree) dumpNode(w *bufio.Writer, eb *ExtentBuffer, level, depth int, o DumpOptions) error {
	if level > maxLevel || eb.Level() != level {
		return fmt.Errorf("engine: dump of tree %d: node %d at level %d, expected %d", t.id, eb.bytenr, eb.Level(), level)
	}
	if err := eb.checkShape(t.eng.geo.nodeSize); err != nil {
		return fmt.Errorf("engine: dump of tree %d: %w", t.id, err)
	}
	indent := strings.Repeat("  ", depth)
	n := eb.ItemCount()
	if eb.IsLeaf() {
		fmt.Fprintf(w, "%sleaf%s gen %d items %d used %d free %d", indent, dumpBytenr(eb.bytenr, o), eb.Generation(), n, eb.leafUsed(), eb.leafFree())
		if !o.Items && n > 0 {
			fmt.Fprintf(w, " keys %v..%v", eb.Key(0), eb.Key(n-1))
		}
		fmt.Fprintln(w)
		if !o.Items {
			return nil
		}
		for i := 0; i < n; i++ {
			fmt.Fprintf(w, "%s  [%d] %v size %d%s\n", indent, i, eb.Key(i), eb.ItemSize(i), dumpPreview(eb.ItemData(i), o.PreviewBytes))
		}
		return nil
	}
	fmt.Fprintf(w, "%snode%s level %d gen %d items %d", indent, dumpBytenr(eb.bytenr, o), level, eb.Generation(), n)
	if level <= o.MinLevel {
		fmt.Fprintf(w, " keys %v..%v\n", eb.Key(0), eb.Key(n-1))
		return nil
	}
	fmt.Fprintln(w)
	for i := 0; i < n; i++ {
		target := ""
		if o.Bytenrs {
			target = fmt.Sprintf(" -> %d", eb.BlockPtr(i))
		}
		fmt.Fprintf(w, "%s  [%d] %v%s gen %d\n", indent, i, eb.Key(i), target, eb.PtrGeneration(i))
		child, err := t.eng.readChild(t, eb, i)
		if err != nil {
			return fmt.Errorf("engine: dump of tree %d: %w", t.id, err)
		}
		child.lock.RLock()
		err = t.dumpNode(w, child, level-1, depth+2, o)
		child.lock.RUnlock()
		if err != nil {
			return err
		}
	}
	return nil
}

func dumpBytenr(bytenr Bytenr, o DumpOptions) string {
	if !o.Bytenrs {
		return ""
	}
	return fmt.Sprintf(" %d", bytenr)
}

// dumpPreview shows the first limit bytes of a payload: hex, then the text
// when every shown byte is printable ASCII, then "..." if there is more.
func dumpPreview(data []byte, limit int) string {
	if limit <= 0 || len(data) == 0 {
		return ""
	}
	shown := data[:min(len(data), limit)]
	s := " " + hex.EncodeToString(shown)
	printable := true
	for _, c := range shown {
		if c < 0x20 || c > 0x7e {
			printable = false
			break
		}
	}
	if printable {
		s += fmt.Sprintf(" %q", shown)
	}
	if len(data) > len(shown) {
		s += "..."
	}
	return s
}
