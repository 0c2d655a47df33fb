package evict

import "errors"

var (
	// ErrLoadPanicked: the load function given to GetOrLoad panicked. The
	// goroutine that ran it panics on; every goroutine that was waiting for
	// the same key gets this error instead of hanging, and nothing is
	// cached.
	ErrLoadPanicked = errors.New("evict: load panicked")
	// ErrOptions: Options.Validate refused the options (a budget that is
	// not positive, a shard count that is not a power of two in 1..256).
	ErrOptions = errors.New("evict: bad options")
	// ErrCheck: Check found the cache's structure broken (a map and a ring
	// that disagree, byte totals that do not add up). It is a bug in this
	// package, never a property of the entries.
	ErrCheck = errors.New("evict: check failed")
)
