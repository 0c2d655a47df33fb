package store

import (
	"sync"
	"syscall"

	"ustore/engine"
)

// The create queue: concurrent creates in one directory, made in batches
// (issue 15). Every create, mkdir and symlink (makeInode) takes its
// directory's mu for its whole lookup-and-insert; with 64 clients creating
// in one directory they took it one at a time, each handing the lock to
// the next through the scheduler, and each starting its own transaction
// handle. So a create that finds another create of its directory in
// progress queues its request instead, and the one in progress — the
// queue's leader — takes the directory's mu once and makes up to
// createBatchMax queued creates in one pass: one handle, one lookup and
// insert after another under one hold of the lock, consecutive inode
// numbers taken at once (atomicIno.takeN), the directory's item written
// once at the end. It then hands each waiter its own result, and goes on
// while the queue holds requests, for at most createLeadPassesMax passes:
// then the oldest waiter leads, so that no caller stays a leader forever
// under a steady stream of creates.
//
// Each request of a pass is what makeInodeLocked makes of it alone, with
// its own answer: its name is looked up after the creates before it in
// the pass (a name made earlier in the pass is EEXIST), its room checked
// (EOVERFLOW), and the space for its nodes checked (metaRoom: ENOSPC)
// before its first change, so a refused request changes nothing — its
// inode number is given back when no one took another since, and is
// otherwise a gap, which no invariant forbids (numbers are never
// reused). A failure after a request's first change aborts the
// transaction, as it does for a lone create; every later request of the
// pass, and every earlier one whose changes are in that transaction, gets
// the abort's error. A deleted directory (checked under its mu, as
// today) gives every request ENOENT.
//
// Who touches what. A queue (createQueue) exists for a directory from its
// first create until its leader finds it empty, in one shard of
// createQueues, under the shard's mu; its waiting requests are its
// members, oldest first. A request's result fields (attr, err, in, lead)
// are written by the leader that takes it, under the directory's mu, and
// read by its caller after done is closed (the close is the
// happens-before); the leader's own request has no done and is read by
// the leader itself. Every member holds a reference on the directory (its
// own getDir), so the directory stays the table's one inode for that
// number while its queue exists. Lock order: the directory's mu, then
// the shard's mu; join takes the shard's mu alone.

// Bounds of the create queue: every queue in the server is bounded.
const (
	// createBatchMax is the most creates one pass makes: 64, the clients
	// issue 15 measures. A pass holds the directory's mu and one
	// transaction handle (which a commit's freeze waits for) across all
	// of them.
	createBatchMax = 64
	// createLeadPassesMax is the most passes one leader makes before the
	// oldest waiter takes over: its own create waits for them.
	createLeadPassesMax = 4
	// createWaitersMax bounds a directory's queue; a create that finds
	// it full takes the directory's mu itself, unbatched.
	createWaitersMax = 1024
	// createQueueShards is the number of shards of the directory-to-queue
	// map.
	createQueueShards = 16
)

// createReq is one create waiting in, or being made by, a queue.
type createReq struct {
	name   string
	mode   uint32
	target string // a symbolic link's

	// Written by the leader that takes the request (see above).
	attr Attr
	err  error
	in   *inode // made in the pass, not yet in the table
	lead bool   // woken to lead the queue, not with a result
	done chan struct{}
}

// createQueue is a directory's waiting creates, oldest first.
type createQueue struct {
	waiting []*createReq
}

type createQueueShard struct {
	mu   sync.Mutex
	dirs map[Ino]*createQueue
}

// createQueues maps a directory to its create queue, while it has one.
type createQueues struct {
	shards [createQueueShards]createQueueShard
}

func (qs *createQueues) shard(dir Ino) *createQueueShard {
	return &qs.shards[uint64(dir)%createQueueShards]
}

// How a request joined its directory's queue.
type createJoin uint8

const (
	createLead     createJoin = iota // no queue was there: the caller leads
	createFollow                     // queued behind a leader: wait on done
	createUnqueued                   // the queue is full: create alone
)

// join queues r for directory dir.
func (qs *createQueues) join(dir Ino, r *createReq) createJoin {
	sh := qs.shard(dir)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	q := sh.dirs[dir]
	if q == nil {
		if sh.dirs == nil {
			sh.dirs = map[Ino]*createQueue{}
		}
		q = &createQueue{}
		sh.dirs[dir] = q
		q.waiting = append(q.waiting, r)
		return createLead
	}
	if len(q.waiting) >= createWaitersMax {
		return createUnqueued
	}
	r.done = make(chan struct{})
	q.waiting = append(q.waiting, r)
	return createFollow
}

// take removes up to n of dir's oldest waiting requests and returns them;
// none (nil) when the queue is empty, which then ends: the next create of
// dir leads a new one. The caller is the leader, holding dir's mu.
func (qs *createQueues) take(dir Ino, n int) []*createReq {
	sh := qs.shard(dir)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	q := sh.waitingLocked(dir)
	if q == nil {
		return nil
	}
	n = min(n, len(q.waiting))
	batch := make([]*createReq, n)
	copy(batch, q.waiting)
	rest := copy(q.waiting, q.waiting[n:])
	clear(q.waiting[rest:])
	q.waiting = q.waiting[:rest]
	return batch
}

// handOff ends the caller's leadership of dir's queue: the oldest waiter
// leads from now, or the queue ends if none waits.
func (qs *createQueues) handOff(dir Ino) {
	sh := qs.shard(dir)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	q := sh.waitingLocked(dir)
	if q == nil {
		return
	}
	next := q.waiting[0]
	next.lead = true
	close(next.done)
}

// waitingLocked returns dir's queue (sh.mu held) when requests wait in
// it; otherwise it ends the queue, whose leader is leaving, and returns
// nil: the next create of dir leads a new one.
func (sh *createQueueShard) waitingLocked(dir Ino) *createQueue {
	q := sh.dirs[dir]
	if len(q.waiting) == 0 {
		delete(sh.dirs, dir)
		return nil
	}
	return q
}

// active reports whether dir's queue exists (has a leader), without
// waiting: true also when its shard's mu is held (CreateNoWait declines
// either way).
func (qs *createQueues) active(dir Ino) bool {
	sh := qs.shard(dir)
	if !sh.mu.TryLock() {
		return true
	}
	defer sh.mu.Unlock()
	_, ok := sh.dirs[dir]
	return ok
}

// queueCreate makes r in directory d (referenced by the caller) through
// d's create queue, and returns its answer.
func (s *Store) queueCreate(d *inode, r *createReq) (Attr, error) {
	switch s.creates.join(d.ino, r) {
	case createUnqueued:
		d.mu.Lock()
		defer d.mu.Unlock()
		return s.makeInodeLocked(d, r.name, r.mode, r.target, s.startMeta)
	case createFollow:
		<-r.done
		if !r.lead {
			return r.attr, r.err
		}
	}
	s.leadCreates(d, r)
	return r.attr, r.err
}

// leadCreates makes d's queued creates, own (at the queue's head) first,
// pass after pass, until the queue is empty or it has made
// createLeadPassesMax passes.
func (s *Store) leadCreates(d *inode, own *createReq) {
	for pass := 0; ; pass++ {
		if pass == createLeadPassesMax {
			s.creates.handOff(d.ino)
			return
		}
		d.mu.Lock()
		batch := s.creates.take(d.ino, createBatchMax)
		if batch == nil {
			d.mu.Unlock()
			return
		}
		s.createBatchLocked(d, batch)
		d.mu.Unlock()
		for _, r := range batch {
			if r != own {
				close(r.done)
			}
		}
	}
}

// createPass is one pass's shared state.
type createPass struct {
	tr      *engine.Trans // started by the pass's first create that passed its checks
	next    Ino           // the next of the numbers taken
	t       engine.Timespec
	aborted error // the transaction was aborted: every later answer
}

// createBatchLocked makes batch's creates in d (mu held), setting each
// request's answer.
func (s *Store) createBatchLocked(d *inode, batch []*createReq) {
	if len(batch) == 1 {
		r := batch[0]
		r.attr, r.err = s.makeInodeLocked(d, r.name, r.mode, r.target, s.startMeta)
		return
	}
	s.stats.createBatches.Add(1)
	s.stats.createsBatched.Add(uint64(len(batch)))
	if d.deleted.Load() {
		for _, r := range batch {
			r.err = syscall.ENOENT
		}
		return
	}
	first := s.nextIno.takeN(len(batch))
	p := createPass{next: first}
	made := batch[:0:0]
	for _, r := range batch {
		if r.err = s.createInPass(d, &p, r); r.err == nil {
			made = append(made, r)
		}
	}
	s.nextIno.giveBack(p.next, first+Ino(len(batch)))
	if p.tr == nil {
		return
	}
	defer p.tr.End()
	if p.aborted == nil && len(made) > 0 {
		d.item.Mtime, d.item.Ctime = p.t, p.t
		if err := s.writeItem(p.tr, d); err != nil {
			p.aborted = s.e.Abort(err)
		}
	}
	for _, r := range made {
		if p.aborted != nil {
			r.err = p.aborted
			continue
		}
		r.attr = s.addNewInode(r.in)
		r.in = nil
	}
}

// createInPass makes r in d (mu held) in pass p: makeInodeLocked's checks
// and changes, in the pass's handle, but for d's item (the pass writes it
// once, createBatchLocked) and the table (after that write).
func (s *Store) createInPass(d *inode, p *createPass, r *createReq) (err error) {
	if p.aborted != nil {
		return p.aborted
	}
	size, err := s.nameFree(d, r.name)
	if err != nil {
		return err
	}
	if p.tr == nil {
		tr, err := s.startMeta(s.opMeta)
		if err != nil {
			return err
		}
		p.tr = tr
	} else if err := s.metaRoom(s.opMeta); err != nil {
		return err
	}
	p.t = now()
	in, err := s.insertInode(p.tr, d, r.name, r.mode, r.target, size, p.next, p.t)
	if err != nil {
		p.aborted = s.e.Abort(err)
		return p.aborted
	}
	p.next++
	r.in = in
	return nil
}
