package engine

import (
	"strconv"

	"ustore/journal"
)

// Generation is what a node carries in its header, and its parent in the
// pointer to it (btrfs: generation): the id of the transaction that wrote
// the node. In the regular trees that id is a journal.Transid; in a log
// tree it is the LogGen of the log sub-transaction, T<<24|sub. A Trans has
// one as its id, and everything keyed by "the transaction that wrote it" —
// dirty nodes, a tree's root history, the allocator's pinned extents — is
// keyed by it. It is its own type, not journal.Transid, because of the log
// trees: their generations are no transaction ids, and are compared only
// with each other. On disk it is a u64.
type Generation uint64

// TransGeneration is the generation of the nodes transaction tid writes.
func TransGeneration(tid journal.Transid) Generation { return Generation(tid) }

// Generation is the generation of the nodes log sub-transaction g writes.
func (g LogGen) Generation() Generation { return Generation(g) }

// Transid is the transaction a regular tree's generation names; meaningless
// for a log tree's.
func (g Generation) Transid() journal.Transid { return journal.Transid(g) }

// String writes the generation in decimal, as Transid.
func (g Generation) String() string { return strconv.FormatUint(uint64(g), 10) }
