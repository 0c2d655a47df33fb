package engine

import "errors"

var (
	// ErrCorruption marks anything read from disk that fails a checksum or a
	// structural check. It becomes EIO for clients; the data is never used.
	ErrCorruption = errors.New("engine: corruption")
	// ErrNoSpace: the device has no free block for the allocation.
	ErrNoSpace = errors.New("engine: no space left on device")
	// ErrExists: an insert found an item with the same key.
	ErrExists = errors.New("engine: item exists")
	// ErrNotFound: no item with the key.
	ErrNotFound = errors.New("engine: item not found")
	// ErrItemTooLarge: an item payload exceeds a quarter of a leaf.
	ErrItemTooLarge = errors.New("engine: item too large")
	// ErrReadOnly: a commit or a log sync failed; the store is read-only.
	// ErrLogFull: a transaction has used every log sub-transaction id;
	// fsync falls back to a commit.
	ErrLogFull  = errors.New("engine: log full")
	ErrReadOnly = errors.New("engine: read-only after a failed commit or log sync")
	// ErrMountedReadOnly: the engine was mounted read-only (Options.ReadOnly);
	// nothing may change. It becomes EROFS for clients.
	ErrMountedReadOnly = errors.New("engine: mounted read-only")
	// ErrNotFormatted: no superblock copy carries the magic; the device
	// holds no ustore filesystem. (Copies that carry it but are all damaged
	// are ErrCorruption.)
	ErrNotFormatted = errors.New("engine: no valid ustore superblock")
	// ErrFormatVersion: the newest superblock is of another format version
	// (or has incompat flags this build does not know).
	ErrFormatVersion = errors.New("engine: unsupported format version")
)
