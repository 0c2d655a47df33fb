package engine

import "fmt"

// Space as the layers above see it: how much a client may still fill, and
// handles that may use the metadata reserve.

// SpaceInfo describes the device's space.
type SpaceInfo struct {
	Total   uint64 // device bytes
	Free    uint64 // allocatable now
	Pinned  uint64 // freed by transactions not yet durable: free after their commit
	Reserve uint64 // kept for deletes and commits; not available to data
	// Available is what new data may take: every hole smaller than a
	// node, and the extents a node fits in beyond Reserve.
	Available uint64
	// MetaAvailable is what new tree nodes may take outside Reserve: the
	// extents a node fits in beyond it.
	MetaAvailable uint64
	// FreeExtents is the number of extents Free is in: the device's
	// fragmentation (random overwrites leave a hole per block freed).
	FreeExtents int
}

// Space returns the device's space accounting: constant time (running
// totals), as it is asked on every buffered write.
func (e *Engine) Space() SpaceInfo {
	if e.readOnly {
		return e.readOnlySpace()
	}
	a := e.alloc
	a.mu.Lock()
	defer a.mu.Unlock()
	a.assertTotals()
	s := SpaceInfo{Total: a.size, Free: a.freeSet.total(), Pinned: a.pinnedSum, Reserve: a.reserve, Available: a.dataAvailable(), FreeExtents: a.freeSet.len()}
	if a.freeSet.bigSum > a.reserve {
		s.MetaAvailable = a.freeSet.bigSum - a.reserve
	}
	return s
}

// StartReserved joins the running transaction for an operation that needs
// about metaBytes of new tree nodes, and lets the handle's node allocations
// use the metadata reserve. With metaBytes > 0 it first checks that
// metaBytes is available outside the reserve and returns ErrNoSpace if not:
// an operation that makes several tree changes is refused before the
// first rather than failing halfway. metaBytes == 0 is for operations that
// free space (unlink, truncate): they always start, so a full device can
// be emptied.
func (e *Engine) StartReserved(metaBytes uint64) (*Trans, error) {
	return e.startReserved(metaBytes, true)
}

// MetaRoom is StartReserved's check alone: ErrNoSpace unless metaBytes of
// new tree nodes are available. For an operation that joins a handle
// already started rather than starting its own (package store's create
// batch).
func (e *Engine) MetaRoom(metaBytes uint64) error {
	if metaBytes > 0 {
		if s := e.Space(); s.MetaAvailable < metaBytes {
			return fmt.Errorf("%w: %d bytes available for tree nodes, the operation may need %d", ErrNoSpace, s.MetaAvailable, metaBytes)
		}
	}
	return nil
}

// TryStartReserved is StartReserved for a caller that must not wait (a
// request served on a connection's reader): where the journal would wait
// for the committing transaction to freeze, it returns an error wrapping
// journal.ErrWouldWait, having started nothing.
func (e *Engine) TryStartReserved(metaBytes uint64) (*Trans, error) {
	return e.startReserved(metaBytes, false)
}

func (e *Engine) startReserved(metaBytes uint64, wait bool) (*Trans, error) {
	if err := e.checkWritable(); err != nil {
		return nil, err
	}
	if err := e.MetaRoom(metaBytes); err != nil {
		return nil, err
	}
	tr, err := e.start(wait)
	if err != nil {
		return nil, err
	}
	tr.reserved = true
	return tr, nil
}

// Abort makes the engine read-only because an operation failed halfway
// through its changes: the running transaction holds half of it and must
// never be committed (btrfs: transaction abort). The newest durable state
// stays what it was. It returns the error every later call gets.
func (e *Engine) Abort(err error) error {
	return e.fail(fmt.Errorf("transaction aborted: %w", err))
}
