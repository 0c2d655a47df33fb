package engine

import (
	"bytes"
	"fmt"

	"ustore/dev"
	"ustore/journal"
)

// The log chain (format version 6): how replay finds the newest durable
// log without a superblock write per log sync (ZFS's ZIL chains its log
// blocks the same way: include/sys/zil.h, zil_lwb_write_issue).
//
// A commit of transaction G allocates, outside any delta, one block for the
// log of G+1 — the chain's head — and names it in its superblock with a
// random chain id. Log sync k of G+1 writes record k into the block the
// chain names next (the head for k = 1), in the same batch as whatever
// else it writes, then flushes: two device round trips. Record k names the
// block record k+1 will go to, allocated now: so the next block's address
// is durable when record k is, while that block is still unwritten.
//
// A record is one of two kinds (the log's side: logtree/delta.go):
//
//   - a checkpoint: the sync wrote the log tree's dirty nodes beside the
//     record, which names their root and carries a digest of them (their
//     bytenrs and checksums, in tree order, of every node newer than the
//     previous record's root), which replay recomputes: a record durable
//     over nodes that are not is rejected;
//   - a delta: the sync wrote no node; the record names the previous
//     record's root (none before the first checkpoint) and carries the
//     sync's changes to the log tree as an opaque payload, applied at
//     replay over that root's tree, after the payloads of the deltas before
//     it since the last checkpoint. A small sync writes 4 KiB instead of
//     the dirty nodes' path from leaf to root.
//
// Replay reads from the head: record k must carry the chain id, the
// transaction G+1, sequence k, its own bytenr and a valid checksum over
// its header and payload, and a delta must name its predecessor's root;
// the first one that does not ends the chain. A stale block — a record of
// an older log, of another chain of the same transaction, or any other
// content — fails one of those checks. If the newest record's sync did not
// complete (its nodes or logged data not all durable), replay falls back
// to record k-1, whose tree was durable before sync k began and stays
// intact until sync k's flush has returned: the blocks CoW'd away since a
// checkpoint are released only once the next checkpoint is durable. The
// logged data is verified against its logged checksums for the same
// reason (logtree.Replay): it sat unflushed beside the record.
//
// Record, a 4096-byte header at the start of its block, then the payload;
// the checksum covers the record rounded up to 4096 bytes, which is what a
// delta writes (a checkpoint writes the whole node-sized block, zeros after
// the header: see SyncLog):
//
//	off size field
//	  0    4 crc32c of bytes [8, record length rounded up to 4096)
//	  8   16 fsid
//	 24    8 bytenr of this block
//	 32    8 magic "_USTLOG6"
//	 40    8 chain id (the superblock's)
//	 48    8 transaction whose log this is (superblock generation + 1)
//	 56    8 sequence, from 1
//	 64   24 log root: bytenr u64, level u8, pad 7, generation u64 (all
//	         zero: no checkpoint yet, the tree is empty)
//	 88    8 log generation of the sync that wrote it
//	 96    8 log generation of the record before (0 for the first)
//	104    8 bytenr of the next record's block
//	112    4 digest: crc32c over (bytenr u64, checksum u32) of each log node
//	         of generation above the previous record's root's, in tree order
//	         (a delta: over nothing)
//	116    1 kind: 0 checkpoint, 1 delta
//	117    3 zero
//	120    4 payload length (a checkpoint: 0)
//	124    4 zero
//	128    n payload, then zeros to the rounded length
const (
	chainCsum       = 0
	chainFsid       = 8
	chainBytenr     = 24
	chainMagicAt    = 32
	chainIDAt       = 40
	chainTransid    = 48
	chainSeq        = 56
	chainRoot       = 64
	chainGen        = 88
	chainPrevGen    = 96
	chainNext       = 104
	chainDigest     = 112
	chainKind       = 116
	chainPayloadLen = 120
	chainPayloadAt  = 128
	chainSize       = SectorSize
)

const (
	chainKindCheckpoint = 0
	chainKindDelta      = 1
)

var chainMagic = [8]byte{'_', 'U', 'S', 'T', 'L', 'O', 'G', '6'}

// chainRecordLen is the length a record with a payload of n bytes is
// checksummed over (and a delta written as): whole sectors.
func chainRecordLen(n int) int {
	return (chainPayloadAt + n + SectorSize - 1) / SectorSize * SectorSize
}

// chainRecord is one log sync's record.
type chainRecord struct {
	bytenr  Bytenr
	id      uint64
	transid journal.Transid
	seq     uint64
	root    rootRef
	gen     LogGen
	prevGen LogGen
	next    Bytenr
	digest  uint32
	delta   bool // a delta record: no nodes, a payload
}

// encode returns the record with payload at the start of a zeroed,
// aligned buffer of size bytes (at least chainRecordLen(len(payload))):
// the block as it is written.
func (r *chainRecord) encode(fsid [16]byte, size int, payload []byte) []byte {
	n := chainRecordLen(len(payload))
	if size < n {
		panic(fmt.Sprintf("engine: a chain record of %d bytes in a buffer of %d", n, size))
	}
	b := dev.AlignedBuffer(size)
	copy(b[chainFsid:], fsid[:])
	le.PutUint64(b[chainBytenr:], uint64(r.bytenr))
	copy(b[chainMagicAt:], chainMagic[:])
	le.PutUint64(b[chainIDAt:], r.id)
	le.PutUint64(b[chainTransid:], uint64(r.transid))
	le.PutUint64(b[chainSeq:], r.seq)
	putRootRef(b[chainRoot:], r.root)
	le.PutUint64(b[chainGen:], uint64(r.gen))
	le.PutUint64(b[chainPrevGen:], uint64(r.prevGen))
	le.PutUint64(b[chainNext:], uint64(r.next))
	le.PutUint32(b[chainDigest:], r.digest)
	if r.delta {
		b[chainKind] = chainKindDelta
	}
	le.PutUint32(b[chainPayloadLen:], uint32(len(payload)))
	copy(b[chainPayloadAt:], payload)
	le.PutUint32(b[chainCsum:], crc32c(b[chainFsid:n]))
	return b
}

// chainExpect is what the predecessor of a record (the superblock, or the
// record before it) says the record at bytenr must be.
type chainExpect struct {
	bytenr  Bytenr
	id      uint64
	transid journal.Transid
	seq     uint64
	prevGen LogGen
	// prevRoot is the root the predecessor named (none for the head): a
	// delta names it too.
	prevRoot rootRef
}

// chainPayloadLenOf returns the payload length a record's first sector
// claims, if a record of this engine's node size can hold it; ok false
// otherwise (which ends the chain: the length is not yet verified).
func (e *Engine) chainPayloadLenOf(first []byte) (int, bool) {
	n := int(le.Uint32(first[chainPayloadLen:]))
	return n, n <= e.LogDeltaMax()
}

// decodeChainRecord returns the record in b (its first
// chainRecordLen(payload length) bytes) and its payload if it is the one
// want describes, and why not otherwise — which ends the chain.
func (e *Engine) decodeChainRecord(b []byte, want chainExpect) (chainRecord, []byte, error) {
	n, ok := e.chainPayloadLenOf(b)
	if !ok || chainRecordLen(n) > len(b) {
		return chainRecord{}, nil, fmt.Errorf("payload of %d bytes", n)
	}
	if got, stored := crc32c(b[chainFsid:chainRecordLen(n)]), le.Uint32(b[chainCsum:]); got != stored {
		return chainRecord{}, nil, fmt.Errorf("checksum %#x, stored %#x", got, stored)
	}
	r := chainRecord{
		bytenr: Bytenr(le.Uint64(b[chainBytenr:])), id: le.Uint64(b[chainIDAt:]),
		transid: journal.Transid(le.Uint64(b[chainTransid:])), seq: le.Uint64(b[chainSeq:]),
		root: getRootRef(b[chainRoot:]), gen: LogGen(le.Uint64(b[chainGen:])),
		prevGen: LogGen(le.Uint64(b[chainPrevGen:])), next: Bytenr(le.Uint64(b[chainNext:])),
		digest: le.Uint32(b[chainDigest:]), delta: b[chainKind] == chainKindDelta,
	}
	payload := b[chainPayloadAt : chainPayloadAt+n]
	switch {
	case !bytes.Equal(b[chainMagicAt:chainMagicAt+8], chainMagic[:]) || !bytes.Equal(b[chainFsid:chainFsid+16], e.fsid[:]):
		return r, nil, fmt.Errorf("not a log chain record of this filesystem")
	case r.bytenr != want.bytenr:
		return r, nil, fmt.Errorf("a record of block %d", r.bytenr)
	case r.id != want.id || r.transid != want.transid:
		return r, nil, fmt.Errorf("a record of chain %#x of transaction %d, not %#x of %d", r.id, r.transid, want.id, want.transid)
	case r.seq != want.seq || r.prevGen != want.prevGen:
		return r, nil, fmt.Errorf("sequence %d after log generation %s, not %d after %s", r.seq, r.prevGen, want.seq, want.prevGen)
	case r.gen.Transid() != want.transid || r.gen <= r.prevGen || r.root.generation > r.gen.Generation():
		return r, nil, fmt.Errorf("log generation %s, root generation %d", r.gen, r.root.generation)
	case !e.chainBlockOK(r.next) || r.next == r.bytenr:
		return r, nil, fmt.Errorf("next record at %d", r.next)
	case b[chainKind] > chainKindDelta || (!r.delta && n != 0):
		return r, nil, fmt.Errorf("a record of kind %d with a payload of %d bytes", b[chainKind], n)
	case r.delta && (r.root != want.prevRoot || r.digest != crc32c(nil)):
		return r, nil, fmt.Errorf("a delta naming log root %d, not its predecessor's %d", r.root.bytenr, want.prevRoot.bytenr)
	case r.root == rootRef{} && r.delta:
		// No checkpoint yet: the log tree is empty but for the deltas.
	case r.root.bytenr < firstAllocatable || r.root.bytenr%SectorSize != 0 ||
		uint64(r.root.bytenr)+uint64(e.geo.nodeSize) > uint64(e.dev.Size()) || r.root.level > maxLevel:
		return r, nil, fmt.Errorf("log root at %d, level %d", r.root.bytenr, r.root.level)
	}
	return r, payload, nil
}

// LogDeltaMax is the most bytes of changes a delta record carries: what
// fits in a node-sized chain block after the record's header.
func (e *Engine) LogDeltaMax() int { return e.geo.nodeSize - chainPayloadAt }

// chainBlockOK: b can hold a chain record.
func (e *Engine) chainBlockOK(b Bytenr) bool {
	return b >= firstAllocatable && b%SectorSize == 0 && uint64(b)+uint64(e.geo.nodeSize) <= e.sb.TotalBytes
}

// readChainRecord reads the record at want.bytenr and its payload; ok
// false when it is not the record want describes (the end of the chain).
// An error is a read error: the chain's end cannot be told.
func (e *Engine) readChainRecord(want chainExpect) (chainRecord, []byte, bool, error) {
	buf := dev.AlignedBuffer(chainSize)
	if err := e.dev.Read([]dev.IO{{Off: int64(want.bytenr), Buf: buf}}); err != nil {
		return chainRecord{}, nil, false, fmt.Errorf("engine: reading log chain block %d: %w", want.bytenr, err)
	}
	if n, ok := e.chainPayloadLenOf(buf); ok && chainRecordLen(n) > chainSize {
		// A delta longer than a sector: read the rest of it.
		whole := dev.AlignedBuffer(chainRecordLen(n))
		copy(whole, buf)
		rest := whole[chainSize:]
		if err := e.dev.Read([]dev.IO{{Off: int64(want.bytenr) + chainSize, Buf: rest}}); err != nil {
			return chainRecord{}, nil, false, fmt.Errorf("engine: reading log chain block %d: %w", want.bytenr, err)
		}
		buf = whole
	}
	r, payload, err := e.decodeChainRecord(buf, want)
	if err != nil {
		e.log.Debug("engine: the log chain ends", "block", want.bytenr, "seq", want.seq, "why", err)
		return r, nil, false, nil
	}
	return r, payload, true, nil
}

// logDigest is the digest of the nodes under root (root included) whose
// generation is above after, in tree order: the nodes a log sync wrote,
// when after is the generation of the sync before. It reads only those
// nodes — at a sync, dirty ones in the cache.
func (e *Engine) logDigest(t *Tree, root *ExtentBuffer, after Generation) (uint32, error) {
	var buf []byte
	var walk func(eb *ExtentBuffer, depth int) error
	walk = func(eb *ExtentBuffer, depth int) error {
		if depth > maxLevel {
			return fmt.Errorf("%w: log tree deeper than %d", ErrCorruption, maxLevel)
		}
		buf = le.AppendUint64(buf, uint64(eb.bytenr))
		buf = le.AppendUint32(buf, eb.storedCsum())
		if eb.IsLeaf() {
			return nil
		}
		for i := range eb.ItemCount() {
			if eb.PtrGeneration(i) <= after {
				continue
			}
			child, err := e.readChild(t, eb, i)
			if err != nil {
				return err
			}
			if err := walk(child, depth+1); err != nil {
				return err
			}
		}
		return nil
	}
	if root.Generation() > after {
		if err := walk(root, 0); err != nil {
			return 0, err
		}
	}
	return crc32c(buf), nil
}
