package store

import (
	"sync"
	"sync/atomic"

	"ustore/dev"
	"ustore/internal/assert"
)

// wbStagingSet is writeback's staging buffers: at most its capacity of
// them, wbChunkBytes each, made on first use and kept for the store's
// life. A batch's pages are copied into one (prepareBatch) and written
// from it; whoever prepares a batch takes a buffer, and the goroutine that
// writes it gives it back once the device write is done (or has failed).
//
// Why a fixed set, and not a sync.Pool (what it was): every collection
// empties a pool, and under the soft memory limit (Store.MemoryLimit) the
// collector runs every few writebacks, so each writeback allocated its
// 8 MiB again while the last one's awaited the next collection. And
// nothing bounded how many were alive: every writeback in progress — the
// flusher's, each fsync's, a rename's, a fallocate's — held up to
// wbPrepareAhead+2 of them. Together that took the process past the
// memory bound (TestMem_Writer). Here the staging memory is at most
// capacity × wbChunkBytes, whatever the writebacks and the collector do.
//
// No deadlock. A writeback waits for a buffer holding only its inode's
// wbMu (every writeback's caller holds no other store lock then; a
// rename's runs before renameMu), and every buffer taken is given back by
// a goroutine that takes none: the device write, then the inode's mu,
// a transaction handle (which never waits on wbMu, invariant 7) and
// extMu, or a commit to unpin space (whose handle holders never wait for
// a staging buffer). A pipeline's prepare side is the only one that
// waits, and the write side it feeds gives back each buffer it writes, so
// a writeback proceeds with one buffer, and so with any capacity ≥ 1.
type wbStagingSet struct {
	// slots holds capacity entries while no buffer is taken: a buffer
	// made earlier, or nil for one not yet made. Taking a buffer is a
	// receive (a wait while all are taken), giving it back a send, which
	// never waits: only a buffer taken goes back.
	slots chan *[]byte
	made  atomic.Int64
}

// wbStagingMax is the most staging buffers a store keeps: what one
// writeback's pipeline uses at once (one batch being written,
// wbPrepareAhead queued, one being prepared). More would not write
// faster — each is a device write of wbChunkBytes — and would be memory
// outside both budgets (memoryLimitSlack counts these 24 MiB).
const wbStagingMax = wbPrepareAhead + 2

// wbStagingCapacity is the number of staging buffers for a dirty budget
// of dirtyBytes: as many as fit in the budget, within [1, wbStagingMax].
// The staging buffers copy dirty pages, so their memory is at most the
// budget's again; a budget under 2 × wbChunkBytes writes back through
// one buffer, its batches prepared and written in turn, not overlapped.
func wbStagingCapacity(dirtyBytes int64) int {
	return int(min(max(dirtyBytes/wbChunkBytes, 1), wbStagingMax))
}

func (p *wbStagingSet) init(capacity int) {
	assert.That(capacity >= 1, "store: a writeback staging set without a buffer")
	p.slots = make(chan *[]byte, capacity)
	for range capacity {
		p.slots <- nil
	}
}

// get takes a staging buffer of wbChunkBytes, waiting while all are taken.
func (p *wbStagingSet) get() *[]byte {
	b := <-p.slots
	if b == nil {
		buf := dev.AlignedBuffer(wbChunkBytes)
		b = &buf
		p.made.Add(1)
	}
	return b
}

// put gives back a buffer get returned.
func (p *wbStagingSet) put(b *[]byte) {
	assert.That(b != nil && len(*b) == wbChunkBytes, "store: a staging buffer not the set's")
	select {
	case p.slots <- b:
	default:
		panic("store: a staging buffer given back twice")
	}
}

// capacity is the most buffers the set holds.
func (p *wbStagingSet) capacity() int { return cap(p.slots) }

// madeCount is how many buffers the set has made: at most its capacity.
func (p *wbStagingSet) madeCount() int { return int(p.made.Load()) }

// wbSmallStagingBytes: a batch of at most this many bytes (an fsync's few
// random 4 KiB writes, say) is staged in a buffer of its own size class,
// not one of the set's: the set has at most wbStagingMax buffers, and a
// buffer is held for the batch's device write and its extent and checksum
// items, so 8 fsyncs writing back 16 KiB each would queue for 3 buffers of
// 8 MiB — an fsync-randwrite job waiting on another's writeback. Such
// buffers are one per writeback in flight, 64 KiB each, and a pool's
// churn after a collection costs 64 KiB, not 8 MiB.
const wbSmallStagingBytes = 64 << 10

var wbSmallStaging = sync.Pool{New: func() any {
	b := dev.AlignedBuffer(wbSmallStagingBytes)
	return &b
}}

// take returns a staging buffer for a batch of n bytes: a small one for a
// small batch, else one of the set's (waiting while all are taken).
func (p *wbStagingSet) take(n uint64) *[]byte {
	if n <= wbSmallStagingBytes {
		return wbSmallStaging.Get().(*[]byte)
	}
	return p.get()
}

// give gives back a buffer take returned.
func (p *wbStagingSet) give(b *[]byte) {
	if len(*b) == wbSmallStagingBytes {
		wbSmallStaging.Put(b)
		return
	}
	p.put(b)
}
