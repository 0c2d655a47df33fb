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
// (btrfs refuses a log replay on a read-only device too). Open refuses with
// ErrLogReplayNeeded; the operator runs `ustore fsck` (which replays the
// log) or `ustore serve` read-write once, then retries. Where the replay
// itself fails on the damaged tree, SkipLogReplay (btrfs: mount -o
// nologreplay) serves the last commit without the log, said in a warning
// that names the log: fsyncs acknowledged after that commit are missing,
// and the operator chose that knowingly.

// writable is the guard at the top of every change.
func (s *Store) writable() error {
	if s.opts.ReadOnly {
		return syscall.EROFS
	}
	return nil
}

// checkNoPendingLog refuses a read-only mount whose log chain holds an
// fsync log, unless opts.SkipLogReplay.
func checkNoPendingLog(e *engine.Engine, opts Options) error {
	gen, ok := e.PendingLog()
	switch {
	case !ok:
		return nil
	case opts.SkipLogReplay:
		opts.Logger.Warn("read-only mount WITHOUT the fsync log: files fsynced after the last commit are served as of that commit",
			"log_generation", gen, "commit_generation", e.CommittedGeneration())
		return nil
	}
	return fmt.Errorf("%w (log generation %d): a read-only mount never writes; "+
		"run 'ustore fsck' (it replays the log) or serve the device read-write once, then retry "+
		"(if the replay fails on the damaged tree, skipping the log serves the last commit without the fsyncs it holds)",
		ErrLogReplayNeeded, gen)
}
