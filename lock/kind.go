package lock

import "sync"

// A kind is the 32-bit word a Class hands to trace.LockWaitBegin, so that
// BPF can bucket waits as the Go side does without knowing any Go type:
//
//	bit 31      write mode (set by the slow path of Lock, clear for RLock)
//	bits 16–30  tree id, low 15 bits (the log tree's ^5 becomes 0x7ffa)
//	bits 8–15   tree level (0 = leaf); 0 for a lock that is not a node's
//	bits 0–7    type: KindNode, KindRoot, KindLogMutex (0: unclassified)
//
// A Class's kind never has the write bit; the slow path ORs it in per
// acquisition, so one class's histogram splits by mode on the BPF side.
const (
	KindNode     uint32 = 1 // a B-tree node's lock
	KindRoot     uint32 = 2 // a tree's root pointer lock
	KindLogMutex uint32 = 3 // the fsync log's mutex (btrfs: log_mutex)

	// KindWrite marks a wait for exclusive ownership (Lock, not RLock).
	KindWrite uint32 = 1 << 31

	kindTreeShift  = 16
	kindTreeMask   = 0x7fff
	kindLevelShift = 8
)

// NodeKind is the kind of the node locks at level of tree id.
func NodeKind(tree uint64, level int) uint32 {
	return KindNode | uint32(level&0xff)<<kindLevelShift | uint32(tree&kindTreeMask)<<kindTreeShift
}

// RootKind is the kind of tree id's root pointer lock.
func RootKind(tree uint64) uint32 {
	return KindRoot | uint32(tree&kindTreeMask)<<kindTreeShift
}

// classNames maps a class kind (write bit clear) to the name of the newest
// Class made with it, for KindName. Kinds are few (trees × levels), so the
// map stays small however many engines a process opens.
var classNames sync.Map // uint32 → string

// KindName returns the name of the class whose kind is k (its write bit is
// ignored), "" when no class has that kind. The eBPF bridge labels BPF
// histograms with it, so that they read like the Go-side ones.
func KindName(k uint32) string {
	if v, ok := classNames.Load(k &^ KindWrite); ok {
		return v.(string)
	}
	return ""
}

// KindFields splits a kind into its fields (see the layout above).
func KindFields(k uint32) (typ uint32, tree uint64, level int, write bool) {
	return k & 0xff, uint64(k >> kindTreeShift & kindTreeMask), int(k >> kindLevelShift & 0xff), k&KindWrite != 0
}
