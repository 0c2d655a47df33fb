package logtree

import (
	"encoding/binary"
	"fmt"

	"github.com/google/btree"

	"ustore/engine"
)

// Deltas: how a small log sync writes 4 KiB instead of the log tree's
// dirty path from leaf to root.
//
// Every change a Writer makes to the log tree is also recorded, in the
// order the tree saw it (Log.deltaMu held across both), as an op in its
// sub-transaction's delta. A sync whose sub-transaction's delta fits in a
// chain record (engine.LogDeltaMax) writes only that record: a delta
// (engine/log_chain.go). The nodes stay dirty, and the sub-transactions
// after it keep changing them in place — they log with the node generation
// of the first sub-transaction since the last checkpoint (LogTrans) — until
// a sync whose delta does not fit, or the DeltaRun-th delta since the last
// checkpoint, writes them all: a checkpoint. Replay rebuilds the log as the
// checkpoint's tree with the deltas after it applied in chain order.
//
// Op encoding, little-endian; a key as engine.AppendKey encodes it
// (objectid u64, type u8, offset u64):
//
//	put:          1, key, u32 length, data  (insert or replace the item)
//	delete range: 2, key from, key to       (every item in [from, to])

const (
	opPut         = 1
	opDeleteRange = 2
	keyLen        = engine.KeyLen
)

// DeltaRunDefault is how many delta records may follow a checkpoint
// before the next sync writes the log's nodes whatever its size: it
// bounds the dirty log nodes held in memory and the payloads replay
// reads, at one checkpoint's writes per DeltaRunDefault syncs.
const DeltaRunDefault = 64

// delta is one sub-transaction's ops; over once they no longer fit in a
// record (they stop growing then: that sync checkpoints).
type delta struct {
	ops  []byte
	over bool
}

func (d *delta) put(limit int, k engine.Key, data []byte) {
	if d.over {
		return
	}
	d.ops = append(d.ops, opPut)
	d.ops = engine.AppendKey(d.ops, k)
	d.ops = binary.LittleEndian.AppendUint32(d.ops, uint32(len(data)))
	d.ops = append(d.ops, data...)
	d.check(limit)
}

func (d *delta) deleteRange(limit int, from, to engine.Key) {
	if d.over {
		return
	}
	d.ops = append(d.ops, opDeleteRange)
	d.ops = engine.AppendKey(d.ops, from)
	d.ops = engine.AppendKey(d.ops, to)
	d.check(limit)
}

func (d *delta) check(limit int) {
	if len(d.ops) > limit {
		d.ops, d.over = nil, true
	}
}

// logItem is one item of a log rebuilt at replay.
type logItem struct {
	key  engine.Key
	data []byte
}

func logItemLess(a, b logItem) bool { return a.key.Less(b.key) }

// rebuiltLog is a log tree's items with deltas applied, in key order.
type rebuiltLog struct {
	items *btree.BTreeG[logItem]
}

// iterateLog calls fn for each item of c's log in key order while fn
// returns true; data is valid only during the call. A log with deltas is
// rebuilt in memory first (its checkpoint's tree, none before the first,
// then the deltas' ops in chain order); one without is its tree.
func iterateLog(c *engine.LogCandidate, fn func(k engine.Key, b []byte) bool) error {
	if len(c.Deltas) == 0 {
		if c.Tree == nil {
			return nil
		}
		return c.Tree.Iterate(engine.MinKey, fn)
	}
	r := &rebuiltLog{items: btree.NewG(32, logItemLess)}
	if c.Tree != nil {
		err := c.Tree.Iterate(engine.MinKey, func(k engine.Key, b []byte) bool {
			r.items.ReplaceOrInsert(logItem{k, append([]byte(nil), b...)})
			return true
		})
		if err != nil {
			return err
		}
	}
	for i, d := range c.Deltas {
		if err := r.apply(d); err != nil {
			return fmt.Errorf("%w: log delta %d of %d: %w", engine.ErrCorruption, i+1, len(c.Deltas), err)
		}
	}
	r.items.Ascend(func(it logItem) bool { return fn(it.key, it.data) })
	return nil
}

// apply applies one delta's ops. The record's checksum has verified its
// bytes: a malformed op is a bug or a forged record, refused all the same.
func (r *rebuiltLog) apply(b []byte) error {
	for len(b) > 0 {
		op := b[0]
		b = b[1:]
		switch op {
		case opPut:
			if len(b) < keyLen+4 {
				return fmt.Errorf("a put op cut short")
			}
			k, n := engine.DecodeKey(b), int(binary.LittleEndian.Uint32(b[keyLen:]))
			b = b[keyLen+4:]
			if n > len(b) {
				return fmt.Errorf("a put of %d bytes with %d left", n, len(b))
			}
			r.items.ReplaceOrInsert(logItem{k, append([]byte(nil), b[:n]...)})
			b = b[n:]
		case opDeleteRange:
			if len(b) < 2*keyLen {
				return fmt.Errorf("a delete-range op cut short")
			}
			from, to := engine.DecodeKey(b), engine.DecodeKey(b[keyLen:])
			b = b[2*keyLen:]
			var doomed []logItem
			r.items.AscendGreaterOrEqual(logItem{key: from}, func(it logItem) bool {
				if to.Less(it.key) {
					return false
				}
				doomed = append(doomed, it)
				return true
			})
			for _, it := range doomed {
				r.items.Delete(it)
			}
		default:
			return fmt.Errorf("op %d", op)
		}
	}
	return nil
}
