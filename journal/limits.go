package journal

import (
	"math"
	"time"
)

// Bounds of the journal, each with its reason.
const (
	// commitIntervalDefault: btrfs's default commit interval (mount option
	// commit=5); it bounds what a crash loses of work nobody fsynced.
	commitIntervalDefault = 5 * time.Second
	// commitIntervalMax: btrfs warns above 300 s; longer intervals only let
	// dirty metadata pile up (DirtyBytesMax then commits instead).
	commitIntervalMax = 300 * time.Second
	// dirtyBytesMaxDefault: 64 MiB of dirty metadata per transaction keeps a
	// commit's write-out to a fraction of a second on the disks we target.
	dirtyBytesMaxDefault int64 = 64 << 20
	// handlesOpenMax bounds the handles open on one transaction. Callers are
	// goroutines serving bounded connections, far fewer than this; reaching
	// it means handles leak (Start without End), which would hold the
	// transaction's commit back forever.
	handlesOpenMax = 1 << 20
	// transidMax: the last id Start may hand out, so that nextTransid never
	// wraps to 0 ("none").
	transidMax Transid = math.MaxUint64 - 1
)

// Compile-time relations: converting a negative constant to uint64 fails to
// compile.
const (
	_ = uint64(commitIntervalMax - commitIntervalDefault)
	_ = uint64(dirtyBytesMaxDefault - 1)
)
