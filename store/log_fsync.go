package store

import (
	"context"
	"errors"
	"syscall"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"ustore/trace"
)

// Fsync makes inode ino durable: its data, its attributes and its names
// (for a directory, its entries). datasync (fdatasync) may skip attributes
// that reading the data does not need; today both take the same path.
//
// The decision, in one place (docs/ARCHITECTURE.md, "The fsync path"):
//
//  1. nothing buffered and the transaction of the inode's last change
//     committed — atomic loads, no lock (journal.Committed, the 2024 jbd2
//     lesson) — done;
//  2. nothing buffered and the inode's last change in a durable log
//     (Store.inLog: atomics, no log mutex) — done;
//  3. write back the inode's dirty pages (their extents exist now), and
//     ask 1 and 2 again;
//  4. log the inode and sync the log, with every fsync that joins the same
//     log transaction (logtree);
//  5. what the log cannot express falls back to a commit, counted by
//     reason.
//
// A deleted inode answers ENOENT, as stat and read do: the protocol names
// inodes by number, and a number whose inode is gone names nothing.
func (s *Store) Fsync(ctx context.Context, ino Ino, datasync bool) error {
	if err := s.fsync(ctx, ino, datasync); err != nil {
		return opErr("fsync", ino, err) // boxing ino allocates: only on failure
	}
	return nil
}

func (s *Store) fsync(ctx context.Context, ino Ino, datasync bool) error {
	// The fast paths: an inode in memory with nothing buffered whose last
	// change is committed, or in a synced log — atomic loads and a
	// lock-free map lookup.
	if in := s.itab.peek(ino); in != nil && !in.buffered.Load() {
		if in.deleted.Load() {
			return syscall.ENOENT // as stat and read
		}
		if s.e.Committed(in.lastTrans.Load()) {
			s.stats.fsyncCommitted.Add(1)
			return nil
		}
		if s.inLog(in) {
			s.stats.fsyncInLog.Add(1)
			return nil
		}
	}
	start := time.Now()
	ctx, span := trace.Start(ctx, "store.fsync", trace.Ino(uint64(ino)), attribute.Bool("datasync", datasync))
	defer span.End()
	err := s.fsyncSlow(ctx, ino, span)
	if err != nil {
		span.RecordError(err)
	}
	trace.RecordFsync(time.Since(start))
	return err
}

// fsyncSlow is fsync past the fast paths.
func (s *Store) fsyncSlow(ctx context.Context, ino Ino, span trace.Span) error {
	in, err := s.getLive(ino)
	if err != nil {
		return err
	}
	defer s.itab.put(in)
	writes, err := s.writeData(ctx, in)
	s.stats.fsyncDataRoundTrips.Add(uint64(writes))
	if err != nil {
		return err
	}
	outcome := outcomeCommitted
	switch {
	case s.e.Committed(in.lastTrans.Load()):
	case s.inLog(in):
		outcome = outcomeInLog
	default:
		outcome, err = s.logAndSync(ctx, in)
		var fb *errFallback
		if errors.As(err, &fb) {
			s.stats.fallback(fb.reason.String())
			span.SetAttributes(attribute.String("fallback", fb.reason.String()))
			outcome = outcomeCommit
			_, err = s.e.Commit(ctx)
		}
	}
	switch outcome {
	case outcomeCommitted:
		s.stats.fsyncCommitted.Add(1)
	case outcomeInLog:
		s.stats.fsyncInLog.Add(1)
	case outcomeLogged:
		s.stats.fsyncLogged.Add(1)
	case outcomeCommit:
		s.stats.fsyncCommit.Add(1)
	}
	span.SetAttributes(attribute.String("outcome", outcome.String()), trace.Transid(uint64(in.lastTrans.Load())))
	return err
}

// writeData writes back in's dirty pages under a write_data span (ordered
// mode: the data is on the device before the log or commit that maps it),
// and says how many batches of writes it waited on, one after the other.
func (s *Store) writeData(ctx context.Context, in *inode) (writes int, err error) {
	if !in.buffered.Load() {
		return 0, nil
	}
	_, span := trace.Start(ctx, "write_data", trace.Ino(uint64(in.ino)))
	defer span.End()
	before := s.stats.writebackBlocks.Load()
	writes, err = s.writebackInodeCounted(in)
	span.SetAttributes(trace.Bytes(int64(s.stats.writebackBlocks.Load()-before) * blockSize))
	if err != nil {
		span.RecordError(err)
	}
	return writes, err
}

// Sync writes back every dirty inode, then commits the running
// transaction and waits for it.
func (s *Store) Sync(ctx context.Context) error {
	return opErr("sync", "/", s.sync(ctx))
}

func (s *Store) sync(ctx context.Context) error {
	ctx, span := trace.Start(ctx, "store.sync")
	defer span.End()
	var first error
	for _, in := range s.wb.dirtyInodes() {
		if err := ctx.Err(); err != nil {
			return err
		}
		if _, err := s.writeData(ctx, in); err != nil && first == nil {
			first = err
		}
	}
	if first != nil {
		span.RecordError(first)
		return first
	}
	_, err := s.e.Commit(ctx)
	return err
}
