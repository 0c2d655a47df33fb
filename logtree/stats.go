package logtree

import "sync/atomic"

type stats struct {
	syncs, contexts, writerWaits, poisoned atomic.Uint64
	checkpoints                            atomic.Uint64
	inPlace, inPlaceParentLocked, inserted atomic.Uint64
}

// Stats are the log's counters since mount.
type Stats struct {
	// Syncs is log syncs; Contexts the fsync contexts they completed:
	// Contexts/Syncs is the mean group-commit batch.
	Syncs, Contexts uint64
	// Checkpoints counts the syncs that wrote the log tree's nodes; the
	// others wrote a delta record only (delta.go).
	Checkpoints uint64
	// WriterWaits: a committer waited for a context still logging.
	WriterWaits uint64
	// Poisoned: a failure while logging made a transaction's log fall back
	// to commits.
	Poisoned uint64
	// InPlace counts items updated in place — an inode item logged again
	// — and InPlaceParentLocked those of them whose search held the leaf's
	// parent write-locked: with the leaf-only search (insLen 0) only when
	// the leaf had to be CoW'd (its first change in a log sub-transaction);
	// with the ablation (Ablations.LogInsertSearch) always. Inserted
	// counts items inserted (a search that may split).
	InPlace, InPlaceParentLocked, Inserted uint64
}

// Stats returns the counters.
func (l *Log) Stats() Stats {
	s := &l.stats
	return Stats{Syncs: s.syncs.Load(), Checkpoints: s.checkpoints.Load(), Contexts: s.contexts.Load(), WriterWaits: s.writerWaits.Load(),
		Poisoned: s.poisoned.Load(), InPlace: s.inPlace.Load(),
		InPlaceParentLocked: s.inPlaceParentLocked.Load(), Inserted: s.inserted.Load()}
}
