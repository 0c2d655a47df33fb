package engine

import (
	"fmt"

	"ustore/journal"
)

// LogGen is a log generation: the generation of log tree nodes made in log
// sub-transaction Sub of transaction Transid, T<<logSubBits | sub (btrfs:
// the log transid). Log generations of one transaction grow with sub, and
// all of them lie between T<<logSubBits and (T+1)<<logSubBits. A log Trans
// has one as its id, and log tree nodes carry it as their generation. On
// disk it is the superblock's log transid, a u64.
type LogGen uint64

// MakeLogGen is the log generation of log sub-transaction sub of
// transaction tid; sub is at most LogSubMax.
func MakeLogGen(tid journal.Transid, sub uint64) LogGen {
	return LogGen(uint64(tid)<<logSubBits | sub)
}

// Transid is the transaction the log generation belongs to.
func (g LogGen) Transid() journal.Transid { return journal.Transid(uint64(g) >> logSubBits) }

// Sub is the log sub-transaction of the log generation.
func (g LogGen) Sub() uint64 { return uint64(g) & LogSubMax }

// String writes the log generation as "T.sub".
func (g LogGen) String() string { return fmt.Sprintf("%d.%d", g.Transid(), g.Sub()) }
