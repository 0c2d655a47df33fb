package engine

// A read-only mount (Options.ReadOnly) is the degraded mode for a damaged
// device: it reads what it can and never writes. Mount then reads only what
// reads need — the root tree and the roots of the trees it names — and
// skips what only writers need: the free space tree (the allocator stays
// empty, so nothing can be allocated) and, if its root is unreadable, the
// free space tree itself. Start refuses every transaction with
// ErrMountedReadOnly, so no transaction ever runs; the journal commits
// only a transaction that ran, and Close of an engine that ran none writes
// nothing: the device's bytes are the same after the mount as before.
// Reads through a damaged node fail with ErrCorruption as they do in a
// read-write mount: one request fails, not the mount.

// ReadOnly reports whether the engine was mounted read-only.
func (e *Engine) ReadOnly() bool { return e.readOnly }

// checkWritable is Start's guard.
func (e *Engine) checkWritable() error {
	if e.readOnly {
		return ErrMountedReadOnly
	}
	return nil
}

// skipTreeReadOnly reports whether a read-only mount may go on without
// tree id, whose root could not be read: only the free space tree, which
// only allocation reads.
func skipTreeReadOnly(opts Options, id uint64, err error) bool {
	if !opts.ReadOnly || id != FreeSpaceTreeID {
		return false
	}
	if opts.Logger != nil {
		opts.Logger.Warn("engine: read-only mount without the free space tree", "err", err)
	}
	return true
}

// readOnlySpace is Space for a read-only mount, from the superblock's
// accounting (the allocator was never loaded): nothing is available.
func (e *Engine) readOnlySpace() SpaceInfo {
	used := e.sb.BytesUsed + firstAllocatable
	s := SpaceInfo{Total: e.sb.TotalBytes}
	if s.Total > used {
		s.Free = s.Total - used
	}
	return s
}
