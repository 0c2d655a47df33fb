package engine

import (
	"bytes"
	"fmt"

	"ustore/dev"
	"ustore/journal"
)

// Superblock is the entry point of the on-disk state. It lives in a pair
// of slots, superSlot0 and superSlot1, each with a mirror: each commit
// writes sequence Seq+1 to both copies of slot Seq+1 mod 2,
// so a torn superblock write leaves the other slot — the previous durable
// state — intact, and one damaged copy of the newest leaves its twin.
// Mount chooses among the four copies (superblock_choice.go). Log syncs
// write no superblock: they append to the log chain a commit's superblock
// names (log_chain.go). Layout:
// docs/FORMAT.md.
type Superblock struct {
	Fsid       [16]byte
	Bytenr     uint64 // the copy this one lives in (in memory: its primary slot)
	Version    uint32
	Incompat   uint32
	Seq        uint64
	Generation journal.Transid // the transaction this superblock commits
	Root       rootRef
	// LogChain is the block the first log chain record of transaction
	// Generation+1 goes to (0: none — that transaction's fsyncs commit),
	// and ChainID the id every record of that chain carries
	// (log_chain.go). Only commits write superblocks.
	LogChain   Bytenr
	ChainID    uint64
	TotalBytes uint64
	BytesUsed  uint64
	NodeSize   uint32
	SectorSize uint32
	CsumType   uint16
	NextIno    Ino
}

const (
	sbCsum       = 0
	sbFsid       = 8
	sbBytenr     = 24
	sbMagic      = 32
	sbVersion    = 40
	sbIncompat   = 44
	sbSeq        = 48
	sbGeneration = 56
	sbRoot       = 64 // bytenr u64, level u8 (+7), generation u64
	sbLogChain   = 88 // the log chain's head block
	sbChainID    = 96
	sbTotalBytes = 120
	sbBytesUsed  = 128
	sbNodeSize   = 136
	sbSectorSize = 140
	sbCsumType   = 144
	sbNextIno    = 152
)

func slotOffset(seq uint64) uint64 {
	if seq%2 == 0 {
		return superSlot0
	}
	return superSlot1
}

func putRootRef(b []byte, r rootRef) {
	le.PutUint64(b[0:], uint64(r.bytenr))
	b[8] = uint8(r.level)
	le.PutUint64(b[16:], uint64(r.generation))
}

func getRootRef(b []byte) rootRef {
	return rootRef{bytenr: Bytenr(le.Uint64(b[0:])), level: int(b[8]), generation: Generation(le.Uint64(b[16:]))}
}

// encode writes the superblock into a 4096-byte buffer, checksum last.
func (sb *Superblock) encode(b []byte) {
	clear(b[:superSize])
	copy(b[sbFsid:], sb.Fsid[:])
	le.PutUint64(b[sbBytenr:], sb.Bytenr)
	copy(b[sbMagic:], superMagic[:])
	le.PutUint32(b[sbVersion:], sb.Version)
	le.PutUint32(b[sbIncompat:], sb.Incompat)
	le.PutUint64(b[sbSeq:], sb.Seq)
	le.PutUint64(b[sbGeneration:], uint64(sb.Generation))
	putRootRef(b[sbRoot:], sb.Root)
	le.PutUint64(b[sbLogChain:], uint64(sb.LogChain))
	le.PutUint64(b[sbChainID:], sb.ChainID)
	le.PutUint64(b[sbTotalBytes:], sb.TotalBytes)
	le.PutUint64(b[sbBytesUsed:], sb.BytesUsed)
	le.PutUint32(b[sbNodeSize:], sb.NodeSize)
	le.PutUint32(b[sbSectorSize:], sb.SectorSize)
	le.PutUint16(b[sbCsumType:], sb.CsumType)
	le.PutUint64(b[sbNextIno:], uint64(sb.NextIno))
	le.PutUint32(b[sbCsum:], crc32c(b[sbFsid:superSize]))
}

// superCopyState classifies one superblock copy as read from the device.
type superCopyState uint8

const (
	// copyBlank: all zeros, never written (mkfs zeroes the pair that
	// sequence 1 does not use).
	copyBlank superCopyState = iota
	// copyDamaged: a read error, no magic, or a checksum mismatch — what bit
	// rot or a write torn by a power cut leaves.
	copyDamaged
	// copyImpossible: a valid checksum over fields no superblock write
	// produces (node size 0, root level 200, a bytenr naming another
	// slot). No crash yields this: it is corruption, never "absent".
	copyImpossible
	// copyVersion: a valid checksum and another format version or unknown
	// incompat flags.
	copyVersion
	// copySound: a valid checksum and sane fields.
	copySound
)

// superCopy is one of the four copies: where it lives, what it is, and
// (for the checksummed states) what it says.
type superCopy struct {
	off   uint64
	state superCopyState
	sb    Superblock // decoded when the checksum is valid
	err   error      // why the copy is not sound
	magic bool       // the copy carries the superblock magic
}

// superCopyOffsets lists the four copies: the two primaries, then their
// mirrors. Copy i belongs to slot pair i mod 2.
var superCopyOffsets = [4]uint64{superSlot0, superSlot1, superSlot0 + superMirrorDistance, superSlot1 + superMirrorDistance}

// slotCopies returns the two copies a superblock of sequence seq goes to:
// its primary slot and that slot's mirror.
func slotCopies(seq uint64) [2]uint64 {
	p := slotOffset(seq)
	return [2]uint64{p, p + superMirrorDistance}
}

// superWrites encodes sb once per copy of its slot pair (each copy names
// its own bytenr, so a misdirected write is caught). Both go out in one
// batch before one flush: the mirror costs no extra device round trip.
func superWrites(sb Superblock) []dev.IO {
	var ios []dev.IO
	for _, off := range slotCopies(sb.Seq) {
		ios = append(ios, superCopyWrite(sb, off))
	}
	return ios
}

// superCopyWrite is the write of sb's copy at off, which names off.
func superCopyWrite(sb Superblock, off uint64) dev.IO {
	sb.Bytenr = off
	buf := dev.AlignedBuffer(superSize)
	sb.encode(buf)
	return dev.IO{Off: int64(off), Buf: buf}
}

// decodeSuperCopy decodes and classifies the copy b read at off.
func decodeSuperCopy(b []byte, off uint64) superCopy {
	c := superCopy{off: off, magic: bytes.Equal(b[sbMagic:sbMagic+8], superMagic[:])}
	switch {
	case !c.magic && isZero(b[:superSize]):
		c.state, c.err = copyBlank, fmt.Errorf("superblock copy at %d is blank", off)
		return c
	case !c.magic:
		c.state, c.err = copyDamaged, fmt.Errorf("%w: superblock copy at %d: bad magic", ErrCorruption, off)
		return c
	}
	if got, want := crc32c(b[sbFsid:superSize]), le.Uint32(b[sbCsum:]); got != want {
		c.state, c.err = copyDamaged, fmt.Errorf("%w: superblock copy at %d: checksum %#x, stored %#x", ErrCorruption, off, got, want)
		return c
	}
	sb := &c.sb
	copy(sb.Fsid[:], b[sbFsid:])
	sb.Bytenr = le.Uint64(b[sbBytenr:])
	sb.Version = le.Uint32(b[sbVersion:])
	sb.Incompat = le.Uint32(b[sbIncompat:])
	sb.Seq = le.Uint64(b[sbSeq:])
	sb.Generation = journal.Transid(le.Uint64(b[sbGeneration:]))
	sb.Root = getRootRef(b[sbRoot:])
	sb.LogChain = Bytenr(le.Uint64(b[sbLogChain:]))
	sb.ChainID = le.Uint64(b[sbChainID:])
	sb.TotalBytes = le.Uint64(b[sbTotalBytes:])
	sb.BytesUsed = le.Uint64(b[sbBytesUsed:])
	sb.NodeSize = le.Uint32(b[sbNodeSize:])
	sb.SectorSize = le.Uint32(b[sbSectorSize:])
	sb.CsumType = le.Uint16(b[sbCsumType:])
	sb.NextIno = Ino(le.Uint64(b[sbNextIno:]))
	if sb.Version != FormatVersion || sb.Incompat != 0 {
		c.state = copyVersion
		c.err = fmt.Errorf("%w: superblock copy at %d: format version %d (incompat flags %#x); this build reads version %d: "+
			"the image was made by another ustore release", ErrFormatVersion, off, sb.Version, sb.Incompat, FormatVersion)
		return c
	}
	if err := sb.check(off); err != nil {
		c.state, c.err = copyImpossible, fmt.Errorf("%w: superblock copy at %d (seq %d) has a valid checksum but %v", ErrCorruption, off, sb.Seq, err)
		return c
	}
	c.state = copySound
	return c
}

// check reports a field of a checksummed superblock at off that no
// superblock write produces.
func (sb *Superblock) check(off uint64) error {
	ns := uint64(sb.NodeSize)
	nodeOK := func(r rootRef) bool {
		return r.bytenr >= firstAllocatable && r.bytenr%SectorSize == 0 && uint64(r.bytenr)+ns <= sb.TotalBytes && r.level <= maxLevel
	}
	switch {
	case sb.Bytenr != off:
		return fmt.Errorf("says it lives at %d", sb.Bytenr)
	case sb.Seq == 0 || slotOffset(sb.Seq) != off && slotOffset(sb.Seq)+superMirrorDistance != off:
		return fmt.Errorf("sequence %d belongs to the other slot", sb.Seq)
	case ns < NodeSizeMin || ns > NodeSizeMax || ns&(ns-1) != 0:
		return fmt.Errorf("node size %d", sb.NodeSize)
	case sb.SectorSize != SectorSize || sb.CsumType != CsumCRC32C:
		return fmt.Errorf("sector size %d, checksum type %d", sb.SectorSize, sb.CsumType)
	case sb.TotalBytes%ns != 0 || sb.TotalBytes < firstAllocatable+64*ns || sb.BytesUsed > sb.TotalBytes:
		return fmt.Errorf("%d bytes total, %d used", sb.TotalBytes, sb.BytesUsed)
	case sb.Generation == 0 || sb.Root.generation == 0 || sb.Root.generation > TransGeneration(sb.Generation):
		return fmt.Errorf("generation %d, root generation %d", sb.Generation, sb.Root.generation)
	case !nodeOK(sb.Root):
		return fmt.Errorf("root tree root at %d, level %d", sb.Root.bytenr, sb.Root.level)
	case (sb.LogChain == 0) != (sb.ChainID == 0):
		return fmt.Errorf("log chain at %d with chain id %#x", sb.LogChain, sb.ChainID)
	case sb.LogChain != 0 && !nodeOK(rootRef{bytenr: sb.LogChain}):
		return fmt.Errorf("log chain at %d", sb.LogChain)
	}
	return nil
}

func isZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}
