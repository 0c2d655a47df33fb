package fsyncbench

import "context"

// Target is a filesystem the workloads run on. The two kinds — a ustore
// server through its client (Ustore), a directory on a kernel filesystem
// through the system calls (Dir) — run the same workload code, so that
// ext4, xfs, btrfs and ustore are measured doing the same thing.
//
// Names are '/'-separated paths relative to the target's root; every
// workload makes a fresh directory of its own under it.
type Target interface {
	// Name says what the target is, for reports ("ustore", "dir /mnt/x").
	Name() string
	// Connect opens what one job works through: a connection of its own
	// on a server (as each fio job is a process with its own files); the
	// directory itself on a kernel filesystem.
	Connect(ctx context.Context) (Conn, error)
	// Counters reads the target's counters now (a server's fsync
	// outcomes, log syncs, commits); nil when it has none.
	Counters(ctx context.Context) (Counters, error)
}

// Conn is one job's way into the target. A Conn is used by one goroutine
// at a time, except that its Files may be used concurrently.
type Conn interface {
	Mkdir(name string) error
	// Create makes a new empty file (an error if name exists) and opens
	// it for reading and writing.
	Create(name string) (File, error)
	// Open opens an existing file for reading and writing.
	Open(name string) (File, error)
	Unlink(name string) error
	Rmdir(name string) error
	// FsyncDir makes directory name durable: its entries, added and
	// removed (fsync(2) of the directory).
	FsyncDir(name string) error
	// Sync makes everything on the filesystem durable (sync, syncfs).
	Sync() error
	Close() error
}

// File is an open file. Its methods may be called concurrently.
type File interface {
	// WriteAt writes all of p at off (pwrite; buffered, as fio's
	// --direct=0 and sysbench's --file-io-mode=sync).
	WriteAt(p []byte, off int64) error
	// ReadAt reads all of p at off (pread).
	ReadAt(p []byte, off int64) error
	// Fsync makes the file durable (fsync(2), not fdatasync).
	Fsync() error
	Close() error
}
