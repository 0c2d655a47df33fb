package logtree

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"ustore/engine"
	"ustore/internal/assert"
	"ustore/journal"
	"ustore/lock"
	"ustore/trace"
)

// ErrLogForceCommit: the log cannot express this fsync (or the log of this
// transaction is poisoned); the caller commits the transaction instead.
var ErrLogForceCommit = errors.New("logtree: fsync needs a full commit")

// Log is the fsync log of the fs root (btrfs: the log fields of struct
// btrfs_root). The mutex is logMutex; it is never held across I/O.
type Log struct {
	e *engine.Engine

	mu   lock.Mutex // class log_mutex, id engine.LogTreeID: its waits are traced
	cond *sync.Cond // signalled when writers drop or a sync ends
	// tid is the transaction the state below belongs to; a Join in a newer
	// transaction starts it afresh (the old log went with its commit).
	tid journal.Transid
	// logTransid is the current log sub-transaction: new contexts join it.
	logTransid uint64
	// logWriters counts contexts of logTransid still logging.
	logWriters int
	// logCommit[sub%2] is the sync of sub in flight, if any.
	logCommit [2]*syncResult
	// logCtxs[sub%2] are the contexts that joined sub.
	logCtxs [2][]*Ctx
	// forceCommit is a transaction whose log is poisoned.
	forceCommit journal.Transid
	// nodeSub is the first sub-transaction since the last checkpoint:
	// contexts log with its node generation (delta.go). deltaRun counts
	// the deltas since that checkpoint.
	nodeSub  uint64
	deltaRun int

	// deltaMu orders the writers' changes to the log tree and their ops
	// in deltas[sub%2], the ops of sub (held across both; never across a
	// sync). deltaMax is what a delta record holds.
	deltaMu  sync.Mutex
	deltas   [2]delta
	deltaMax int

	// DeltaRun is how many delta records may follow a checkpoint
	// (DeltaRunDefault); 0 makes every sync a checkpoint, as before format
	// 6 (Ablations.LogNodesEverySync). Set before use.
	DeltaRun int

	// lastLogCommit is the log generation of the newest durable log sync.
	lastLogCommit atomic.Uint64

	// Ablations: of them the log reads LogInsertSearch (writer.go). Set
	// before use.
	Ablations journal.Ablations

	stats stats
}

// syncResult is one sync's outcome, for everyone who waits on it.
type syncResult struct {
	done chan struct{}
	err  error
}

// Ctx is one fsync's part in a log transaction (btrfs: btrfs_log_ctx).
type Ctx struct {
	l     *Log
	tid   journal.Transid
	sub   uint64
	left  bool     // Done called
	role  syncRole // what it did in the log sync that completed it
	batch int      // with roleCommitter: the contexts its sync completed
}

// syncRole is what a context did in the log sync that completed it.
type syncRole uint8

const (
	// roleNone: it synced nothing — its sub-transaction was durable
	// already, or the fsync commits instead.
	roleNone syncRole = iota
	// roleCommitter: it wrote the log sync for every context that joined.
	roleCommitter
	// roleWaiter: it waited for the sync another context committed
	// (counted in that one's batch).
	roleWaiter
)

func (r syncRole) String() string {
	switch r {
	case roleNone:
		return "none"
	case roleCommitter:
		return "committer"
	case roleWaiter:
		return "waiter"
	}
	return "unknown"
}

// New returns the log of engine e.
func New(e *engine.Engine) *Log {
	l := &Log{e: e, deltaMax: e.LogDeltaMax(), DeltaRun: DeltaRunDefault}
	l.mu.Init(lock.NewClass("log_mutex", lock.KindLogMutex), engine.LogTreeID)
	l.cond = sync.NewCond(&l.mu)
	return l
}

// LastLogCommit is the log generation of the newest durable log sync: an
// inode logged at a generation not above it is in a durable log. One
// atomic load.
func (l *Log) LastLogCommit() engine.LogGen { return engine.LogGen(l.lastLogCommit.Load()) }

// Join makes a context for the fsync of one inode in tr's transaction and
// returns it with the handle to log with. The caller must call Done once
// it has logged (or given up), then Sync (unless it gives up). It fails
// with ErrLogForceCommit when the transaction's log is poisoned.
func (l *Log) Join(tr *engine.Trans) (*Ctx, *engine.Trans, error) {
	l.mu.Lock()
	if tr.ID() < l.tid {
		// A late fsync of a transaction that is committing, after the
		// next one began logging: that commit makes it durable.
		l.mu.Unlock()
		return nil, nil, ErrLogForceCommit
	}
	if l.tid != tr.ID() {
		l.tid = tr.ID()
		l.logTransid = 1
		l.logWriters = 0
		l.logCommit = [2]*syncResult{}
		l.logCtxs = [2][]*Ctx{}
		l.nodeSub, l.deltaRun = 1, 0
		l.deltaMu.Lock()
		l.deltas = [2]delta{}
		l.deltaMu.Unlock()
	}
	if l.forceCommit == l.tid {
		l.mu.Unlock()
		return nil, nil, ErrLogForceCommit
	}
	// The pair of the committer's check (invariant 1): the
	// sub-transaction a context joins has no sync begun, so what it logs
	// goes out with that sub-transaction's sync.
	if l.logCommit[l.logTransid%2] != nil {
		assert.Failf("logtree: a context joins sub-transaction %d of transaction %d while its sync is in flight (invariant 1)", l.logTransid, l.tid)
	}
	c := &Ctx{l: l, tid: l.tid, sub: l.logTransid}
	nodeSub := l.nodeSub
	l.logWriters++
	l.logCtxs[c.sub%2] = append(l.logCtxs[c.sub%2], c)
	l.mu.Unlock()
	lt, err := l.e.LogTrans(tr, c.sub, nodeSub)
	if err != nil {
		l.Poison(c)
		c.Done()
		return nil, nil, errors.Join(ErrLogForceCommit, err)
	}
	return c, lt, nil
}

// Generation is the log generation the context logs in.
func (c *Ctx) Generation() engine.LogGen { return engine.MakeLogGen(c.tid, c.sub) }

// Done ends the context's logging: the committer of its sub-transaction
// may go ahead once every context has.
func (c *Ctx) Done() {
	l := c.l
	l.mu.Lock()
	if !c.left {
		c.left = true
		if l.tid == c.tid && l.logTransid == c.sub {
			l.logWriters--
			assert.That(l.logWriters >= 0, "logtree: a sub-transaction's writers are counted once each (invariant 1)")
			l.cond.Broadcast()
		}
	}
	l.mu.Unlock()
}

// Poison makes every fsync of c's transaction fall back to a commit: its
// log may hold half of what c meant to log.
func (l *Log) Poison(c *Ctx) {
	l.mu.Lock()
	l.forceCommit = c.tid
	l.mu.Unlock()
	l.stats.poisoned.Add(1)
}

// Sync makes c's log sub-transaction durable (btrfs: btrfs_sync_log). The
// first context to get here commits it for all that joined; the others
// wait for that result. The caller still holds its transaction handle.
func (l *Log) Sync(ctx context.Context, c *Ctx) error {
	ctx, span := trace.Start(ctx, "logtree.sync_log", trace.Transid(uint64(c.tid)))
	defer span.End()
	start := time.Now()
	err := l.sync(ctx, c)
	if err != nil {
		span.RecordError(err)
	}
	span.SetAttributes(trace.LogSyncRole(c.role.String()))
	if c.role == roleCommitter {
		span.SetAttributes(trace.BatchSize(c.batch))
	}
	trace.RecordLogSync(time.Since(start), c.batch) // a batch only for the committer
	return err
}

func (l *Log) sync(ctx context.Context, c *Ctx) error {
	c.Done()
	l.mu.Lock()
	idx := c.sub % 2
	for {
		if l.tid != c.tid {
			// The transaction committed (its log with it) while we waited.
			l.mu.Unlock()
			return ErrLogForceCommit
		}
		if l.forceCommit == c.tid {
			l.mu.Unlock()
			return ErrLogForceCommit
		}
		if r := l.logCommit[idx]; r != nil && c.sub < l.logTransid {
			// Our sub-transaction is being synced by its committer.
			l.mu.Unlock()
			<-r.done
			// The pair of the committer's store (invariant 3): a sync
			// that succeeded published its generation before done.
			if !(r.err != nil || l.LastLogCommit() >= c.Generation()) {
				assert.Failf("logtree: sub-transaction %d of transaction %d synced, but lastLogCommit is %d (invariant 3)", c.sub, c.tid, l.lastLogCommit.Load())
			}
			c.role = roleWaiter // counted in the committer's batch
			return r.err
		}
		if c.sub < l.logTransid {
			// Synced already: lastLogCommit tells.
			l.mu.Unlock()
			if l.LastLogCommit() >= c.Generation() {
				return nil
			}
			return ErrLogForceCommit
		}
		// We commit c.sub: wait for the previous sync (it wrote nodes our
		// chain record may name) and for our writers.
		if prev := l.logCommit[(c.sub+1)%2]; prev != nil {
			l.mu.Unlock()
			<-prev.done
			l.mu.Lock()
			continue
		}
		if l.logWriters > 0 {
			l.stats.writerWaits.Add(1)
			l.cond.Wait()
			continue
		}
		break
	}
	// The committer of c.sub: its writers are all done (1), no other sync
	// is in flight (2), and the log is not poisoned (4).
	assert.That(l.logWriters == 0 && c.sub == l.logTransid, "logtree: a sync begins with no writer, on the current sub-transaction (invariant 1)")
	assert.That(l.logCommit[idx] == nil && l.logCommit[(c.sub+1)%2] == nil, "logtree: one sync at a time (invariant 2)")
	assert.That(l.forceCommit != c.tid, "logtree: a poisoned log is never synced (invariant 4)")
	r := &syncResult{done: make(chan struct{})}
	l.logCommit[idx] = r
	ctxs := l.logCtxs[idx]
	l.logCtxs[idx] = nil
	// Delta or checkpoint, decided before the next sub-transaction's
	// first context joins: after a checkpoint it logs with new node
	// generations (its changes CoW the nodes this sync writes), after a
	// delta with the same ones (it changes them in place; nobody writes
	// them meanwhile).
	l.deltaMu.Lock()
	d := l.deltas[idx]
	l.deltas[idx] = delta{}
	l.deltaMu.Unlock()
	checkpoint := d.over || l.deltaRun >= min(l.DeltaRun, engine.LogDeltaRunMax)
	if checkpoint {
		l.nodeSub, l.deltaRun = c.sub+1, 0
		d.ops = nil
	} else {
		l.deltaRun++
	}
	l.logTransid++
	l.logWriters = 0
	l.mu.Unlock()

	_, err := l.e.SyncLog(context.WithoutCancel(ctx), c.tid, c.sub, checkpoint, d.ops)
	if err != nil && !checkpoint {
		// A delta that did not go out took its ops with it, while the
		// tree keeps its changes: a later record of this transaction
		// would describe a log without them. Its fsyncs commit instead
		// (ErrLogFull changes nothing else), and so must every later
		// one of the transaction.
		l.Poison(c)
	}
	if err == nil {
		// No logMutex: only committers write it, one at a time, in
		// sub-transaction order (2, 3).
		assert.That(c.Generation() > l.LastLogCommit(), "logtree: lastLogCommit only grows (invariant 3)")
		l.lastLogCommit.Store(uint64(c.Generation()))
	}
	c.role, c.batch = roleCommitter, len(ctxs)
	l.stats.syncs.Add(1)
	if checkpoint {
		l.stats.checkpoints.Add(1)
	}
	l.stats.contexts.Add(uint64(len(ctxs)))
	r.err = err
	close(r.done)
	l.mu.Lock()
	if l.logCommit[idx] == r {
		l.logCommit[idx] = nil
	}
	l.cond.Broadcast()
	l.mu.Unlock()
	return err
}
