package store

import (
	"fmt"
	"syscall"

	"ustore/engine"
)

// A read-only store (Options.ReadOnly) is the degraded mode for a damaged
// device: `ustore serve --read-only`, so that users can copy out what is
// intact. It mounts the engine read-only (engine/read_only.go: no free
// space tree, no transaction ever) and reads no more at mount than the
// root directory's inode: not the highest inode number (only creates need
// it, and it sits on the fs tree's rightmost path, which one bad node
// makes unreadable). Every change is refused with EROFS before it touches
// anything, as Linux refuses it on a read-only mount; fsync and sync
// succeed, having nothing to make durable. A read through a damaged node
// fails with EIO, that request only.
//
// An fsync log the superblock names is not replayed: replaying writes
// (btrfs refuses a log replay on a read-only device too, and mount -o
// nologreplay drops the log, which would hide acknowledged fsyncs). Open
// refuses with ErrLogReplayNeeded; the operator runs `ustore fsck` (which
// replays the log) or `ustore serve` read-write once, then retries.

// writable is the guard at the top of every change.
func (s *Store) writable() error {
	if s.opts.ReadOnly {
		return syscall.EROFS
	}
	return nil
}

// checkNoPendingLog refuses a read-only mount whose superblock names an
// fsync log.
func checkNoPendingLog(e *engine.Engine) error {
	if gen, ok := e.PendingLog(); ok {
		return fmt.Errorf("%w (log generation %d): a read-only mount never writes; "+
			"run 'ustore fsck' (it replays the log) or serve the device read-write once, then retry", ErrLogReplayNeeded, gen)
	}
	return nil
}
