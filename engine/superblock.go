package engine

import (
	"bytes"
	"fmt"
)

// Superblock is the entry point of the on-disk state. Two copies live at
// superSlot0 and superSlot1; each commit (and, later, each log sync) writes
// sequence Seq+1 to slot Seq+1 mod 2, so a torn superblock write leaves the
// other slot — the previous durable state — intact. Layout: docs/FORMAT.md.
type Superblock struct {
	Fsid       [16]byte
	Bytenr     uint64 // the slot this copy lives in
	Version    uint32
	Incompat   uint32
	Seq        uint64
	Generation uint64 // the transaction this superblock commits
	Root       rootRef
	LogRoot    rootRef
	LogTransid uint64
	TotalBytes uint64
	BytesUsed  uint64
	NodeSize   uint32
	SectorSize uint32
	CsumType   uint16
	NextIno    uint64
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
	sbLogRoot    = 88 // bytenr u64, level u8 (+7), generation u64
	sbLogTransid = 112
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
	le.PutUint64(b[0:], r.bytenr)
	b[8] = uint8(r.level)
	le.PutUint64(b[16:], r.generation)
}

func getRootRef(b []byte) rootRef {
	return rootRef{bytenr: le.Uint64(b[0:]), level: int(b[8]), generation: le.Uint64(b[16:])}
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
	le.PutUint64(b[sbGeneration:], sb.Generation)
	putRootRef(b[sbRoot:], sb.Root)
	putRootRef(b[sbLogRoot:], sb.LogRoot)
	le.PutUint64(b[sbLogTransid:], sb.LogTransid)
	le.PutUint64(b[sbTotalBytes:], sb.TotalBytes)
	le.PutUint64(b[sbBytesUsed:], sb.BytesUsed)
	le.PutUint32(b[sbNodeSize:], sb.NodeSize)
	le.PutUint32(b[sbSectorSize:], sb.SectorSize)
	le.PutUint16(b[sbCsumType:], sb.CsumType)
	le.PutUint64(b[sbNextIno:], sb.NextIno)
	le.PutUint32(b[sbCsum:], crc32c(b[sbFsid:superSize]))
}

// decodeSuperblock validates and decodes one slot.
func decodeSuperblock(b []byte, slot uint64) (Superblock, error) {
	var sb Superblock
	if !bytes.Equal(b[sbMagic:sbMagic+8], superMagic[:]) {
		return sb, fmt.Errorf("%w: superblock at %d: bad magic", ErrNotFormatted, slot)
	}
	if got, want := crc32c(b[sbFsid:superSize]), le.Uint32(b[sbCsum:]); got != want {
		return sb, fmt.Errorf("%w: superblock at %d: checksum %#x, stored %#x", ErrCorruption, slot, got, want)
	}
	copy(sb.Fsid[:], b[sbFsid:])
	sb.Bytenr = le.Uint64(b[sbBytenr:])
	sb.Version = le.Uint32(b[sbVersion:])
	sb.Incompat = le.Uint32(b[sbIncompat:])
	sb.Seq = le.Uint64(b[sbSeq:])
	sb.Generation = le.Uint64(b[sbGeneration:])
	sb.Root = getRootRef(b[sbRoot:])
	sb.LogRoot = getRootRef(b[sbLogRoot:])
	sb.LogTransid = le.Uint64(b[sbLogTransid:])
	sb.TotalBytes = le.Uint64(b[sbTotalBytes:])
	sb.BytesUsed = le.Uint64(b[sbBytesUsed:])
	sb.NodeSize = le.Uint32(b[sbNodeSize:])
	sb.SectorSize = le.Uint32(b[sbSectorSize:])
	sb.CsumType = le.Uint16(b[sbCsumType:])
	sb.NextIno = le.Uint64(b[sbNextIno:])
	switch {
	case sb.Bytenr != slot:
		return sb, fmt.Errorf("%w: superblock at %d says it lives at %d", ErrCorruption, slot, sb.Bytenr)
	case sb.Version != FormatVersion:
		return sb, fmt.Errorf("engine: superblock at %d: format version %d, this build reads %d", slot, sb.Version, FormatVersion)
	case sb.NodeSize < NodeSizeMin || sb.NodeSize > NodeSizeMax || sb.NodeSize&(sb.NodeSize-1) != 0:
		return sb, fmt.Errorf("%w: superblock at %d: node size %d", ErrCorruption, slot, sb.NodeSize)
	case sb.SectorSize != SectorSize || sb.CsumType != CsumCRC32C:
		return sb, fmt.Errorf("%w: superblock at %d: sector size %d, checksum type %d", ErrCorruption, slot, sb.SectorSize, sb.CsumType)
	case sb.Root.level > maxLevel:
		return sb, fmt.Errorf("%w: superblock at %d: root level %d", ErrCorruption, slot, sb.Root.level)
	}
	return sb, nil
}
