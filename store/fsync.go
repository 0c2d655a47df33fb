package store

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"ustore/trace"
)

// Fsync makes file ino durable: its data, its attributes and — for a new
// file — its name. datasync (fdatasync) may skip attributes that reading
// the data does not need; today both take the same path.
//
// The decision lives here, in one place, so that the log tree (a later
// change) replaces only the last step:
//
//  1. if nothing of the inode is buffered and the transaction of its last
//     change is committed — atomic loads, no lock (journal.Committed, the
//     2024 jbd2 lesson) — done;
//  2. write back the inode's dirty pages (their extents exist now);
//  3. if the transaction of the inode's last change is committed, done;
//  4. otherwise commit, and wait.
func (s *Store) Fsync(ctx context.Context, ino uint64, datasync bool) error {
	if err := s.fsync(ctx, ino, datasync); err != nil {
		return opErr("fsync", ino, err) // boxing ino allocates: only on failure
	}
	return nil
}

func (s *Store) fsync(ctx context.Context, ino uint64, datasync bool) error {
	// The fast path: an inode in memory with nothing buffered whose last
	// change is committed — three atomic loads and a lock-free map lookup.
	if in := s.itab.peek(ino); in != nil && !in.buffered.Load() && s.e.Committed(in.lastTrans.Load()) {
		s.stats.fsyncCommitted.Add(1)
		return nil
	}
	start := time.Now()
	ctx, span := trace.Start(ctx, "store.fsync", trace.Ino(ino), attribute.Bool("datasync", datasync))
	defer span.End()
	err := s.fsyncSlow(ctx, ino, span)
	if err != nil {
		span.RecordError(err)
	}
	trace.RecordFsync(time.Since(start))
	return err
}

// fsyncSlow is fsync past the fast path: write back, then commit unless
// the inode's last change is already committed.
func (s *Store) fsyncSlow(ctx context.Context, ino uint64, span trace.Span) error {
	in, err := s.itab.get(ino)
	if err != nil {
		return err
	}
	defer s.itab.put(in)
	if err := s.writeData(ctx, in); err != nil {
		return err
	}
	if s.e.Committed(in.lastTrans.Load()) {
		s.stats.fsyncCommitted.Add(1)
		span.SetAttributes(attribute.String("outcome", "committed"))
		return nil
	}
	s.stats.fsyncCommit.Add(1)
	span.SetAttributes(attribute.String("outcome", "commit"), trace.Transid(in.lastTrans.Load()))
	_, err = s.e.Commit(ctx)
	return err
}

// writeData writes back in's dirty pages under a write_data span (ordered
// mode: the data is on the device before the commit that maps it starts).
func (s *Store) writeData(ctx context.Context, in *inode) error {
	if !in.buffered.Load() {
		return nil
	}
	_, span := trace.Start(ctx, "write_data", trace.Ino(in.ino))
	defer span.End()
	before := s.stats.writebackBlocks.Load()
	err := s.writebackInode(in)
	span.SetAttributes(trace.Bytes(int64(s.stats.writebackBlocks.Load()-before) * blockSize))
	if err != nil {
		span.RecordError(err)
	}
	return err
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
		if err := s.writeData(ctx, in); err != nil && first == nil {
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
