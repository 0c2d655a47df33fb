package store

import (
	"errors"
	"slices"
	"sync"
	"syscall"

	"ustore/dev"
	"ustore/engine"
)

// fallocate's modes, Linux's FALLOC_FL_* values.
const (
	FallocKeepSize  = 0x01 // FALLOC_FL_KEEP_SIZE: allocate, the size stays
	FallocPunchHole = 0x02 // FALLOC_FL_PUNCH_HOLE: free the range (with KEEP_SIZE only)
)

// Fallocate allocates or frees file ino's blocks in [off, off+length), as
// fallocate(2), and returns the file's attributes:
//
//   - mode 0 allocates every hole of the range as written zero blocks and
//     grows the file to off+length if that is past its end;
//   - FallocKeepSize does the same without changing the size, within the
//     file's last block: the format has no preallocated extent (btrfs's
//     PREALLOC), and an extent past the size is what fsck and log replay
//     take for a truncate's leftover, so the part of the range past the end
//     is accepted and allocates nothing;
//   - FallocPunchHole|FallocKeepSize frees the whole blocks of the range
//     (extents removed or split, their space returned) and zeroes the
//     partial blocks at its edges in buffered pages.
//
// Every other mode, PUNCH_HOLE without KEEP_SIZE included, is EOPNOTSUPP,
// as Linux answers for a filesystem without it. An allocation that does
// not fit fails with ENOSPC before anything changes. Blocks allocated here
// are ordinary copy-on-write extents: a later overwrite writes new blocks
// and can still meet ENOSPC, as on btrfs (docs/RELIABILITY.md).
func (s *Store) Fallocate(ino Ino, mode uint32, off, length int64) (Attr, error) {
	a, err := s.fallocate(ino, mode, off, length)
	return a, opErr("fallocate", ino, err)
}

func (s *Store) fallocate(ino Ino, mode uint32, off, length int64) (Attr, error) {
	// vfs_fallocate's order of checks.
	if off < 0 || length <= 0 {
		return Attr{}, syscall.EINVAL
	}
	if mode != 0 && mode != FallocKeepSize && mode != FallocPunchHole|FallocKeepSize {
		return Attr{}, syscall.EOPNOTSUPP
	}
	if err := s.writable(); err != nil {
		return Attr{}, err
	}
	in, err := s.getLive(ino)
	if err != nil {
		return Attr{}, err
	}
	defer s.itab.put(in)
	if err := in.regularOnly(); err != nil {
		return Attr{}, err // EISDIR, or EINVAL for a symbolic link, as write
	}
	if off > MaxFileSize || length > MaxFileSize-off {
		return Attr{}, syscall.EFBIG
	}
	start, end := uint64(off), uint64(off+length)
	if mode&FallocPunchHole != 0 {
		return s.punchHole(in, start, end)
	}
	return s.allocate(in, start, end, mode&FallocKeepSize == 0)
}

// allocate is fallocate's modes 0 (grow: true) and KEEP_SIZE.
//
// wbMu is held throughout, so no writeback or truncate changes the extents
// between the look for holes and their mapping. Before the look, the
// file's dirty pages are written back (a hole with a dirty page is data on
// its way, and the tree's size must cover the written data before it may
// grow past it); when the file grows, the old last block's tail is zeroed
// first, in a dirty page that this writeback writes, so the bytes a
// truncate left on the device past the old end are zeros before the
// tree's size covers them.
func (s *Store) allocate(in *inode, start, end uint64, grow bool) (Attr, error) {
	if err := s.makeRoom(); err != nil {
		return Attr{}, err
	}
	in.wbMu.Lock()
	defer in.wbMu.Unlock()
	in.mu.Lock()
	if in.deleted.Load() {
		in.mu.Unlock()
		return Attr{}, syscall.ENOENT
	}
	var err error
	if grow {
		err = s.growTailLocked(in, end)
	}
	in.mu.Unlock()
	if err != nil {
		return Attr{}, err
	}
	// A file that grows past an inline extent has block 0 dirty (its tail
	// zeroed): written back as a regular extent, the file is one kind of
	// extent throughout.
	if _, err := s.writebackHeld(in, !grow || end <= uint64(s.inlineMax)); err != nil {
		return Attr{}, err
	}

	in.mu.Lock()
	limit := (in.diskSize + blockSize - 1) / blockSize * blockSize
	if grow {
		limit = max(limit, (end+blockSize-1)/blockSize*blockSize)
	}
	size := in.diskSize
	if grow {
		size = max(size, end)
	}
	runs, err := s.holeRuns(in, start/blockSize*blockSize, min(end, limit))
	in.mu.Unlock()
	if err != nil {
		return Attr{}, err
	}
	n := 0
	for _, r := range runs {
		n += int(r.count)
	}
	// The whole allocation is promised before the first block is written:
	// ENOSPC leaves the file as it was.
	if err := s.reserveAllocation(n); err != nil {
		return Attr{}, err
	}
	defer s.wb.unreserve(n)
	// Until the reservation goes, each allocated block is counted twice,
	// as a writeback's: a writer short of space waits for the end.
	s.wb.beginWriteback()
	err = s.writeZeroRuns(in, runs, size)
	s.wb.endWriteback()
	if err != nil {
		return Attr{}, err
	}
	return s.allocateDone(in, end, grow)
}

// reserveAllocation promises the space of n blocks (as n buffered pages
// would hold it), committing once to unpin space freed by transactions
// not yet durable. Only wbMu is held: no handle holder waits for it.
func (s *Store) reserveAllocation(n int) error {
	err := s.wb.reserve(n, false)
	if errors.Is(err, engine.ErrNoSpace) {
		did, cerr := s.commitToUnpin()
		if cerr != nil {
			return cerr
		}
		if did {
			err = s.wb.reserve(n, false)
		}
	}
	return err
}

// allocateDone writes the item: the size grown (mode 0), the times.
func (s *Store) allocateDone(in *inode, end uint64, grow bool) (_ Attr, err error) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.deleted.Load() {
		return Attr{}, syscall.ENOENT
	}
	// The extents are in: this handle only updates the item, and takes
	// the metadata reserve rather than fail with the size behind them.
	tr, err := s.e.StartReserved(0)
	if err != nil {
		return Attr{}, err
	}
	defer tr.End()
	defer s.abortOnError(&err)
	t := now()
	if grow && end > in.size {
		in.size = end
		in.item.Mtime = t
		if in.pages.empty() {
			in.diskSize = end
		}
	}
	in.item.Ctime = t
	if err := s.writeItem(tr, in); err != nil {
		return Attr{}, err
	}
	return in.attrLocked(), nil
}

// holeRuns returns the runs of blocks in [start, end) (start block
// aligned) that no extent maps and no buffered page holds (in.mu held,
// and wbMu: the extents do not change). Its work is bounded by the
// extents and pages there are, not by the range's length.
func (s *Store) holeRuns(in *inode, start, end uint64) ([]wbRun, error) {
	if start >= end {
		return nil, nil
	}
	xs, err := s.extentsIn(in.ino, start, end)
	if err != nil {
		return nil, err
	}
	var runs []wbRun
	add := func(from, to uint64) { // byte range, from block aligned
		runs = append(runs, wbRun{from / blockSize, (to - from + blockSize - 1) / blockSize})
	}
	at := start
	for _, f := range xs {
		if f.off > at {
			add(at, min(f.off, end))
		}
		at = max(at, f.end())
	}
	if at < end {
		add(at, end)
	}
	var paged []uint64
	for _, m := range []map[uint64]*page{in.pages.dirty, in.pages.wb} {
		for b := range m {
			paged = append(paged, b)
		}
	}
	return withoutBlocks(runs, paged), nil
}

// withoutBlocks returns runs (sorted, disjoint) less the blocks of skip.
func withoutBlocks(runs []wbRun, skip []uint64) []wbRun {
	if len(skip) == 0 {
		return runs
	}
	slices.Sort(skip)
	var out []wbRun
	for _, r := range runs {
		at, end := r.first, r.first+r.count
		i, _ := slices.BinarySearch(skip, at)
		for ; i < len(skip) && skip[i] < end; i++ {
			if skip[i] > at {
				out = append(out, wbRun{at, skip[i] - at})
			}
			at = skip[i] + 1
		}
		if at < end {
			out = append(out, wbRun{at, end - at})
		}
	}
	return out
}

// zeroExtentBytes is the zero buffer every allocated extent is written
// from: as long as the longest extent, never written, made on first use.
var zeroExtentBytes = sync.OnceValue(func() []byte { return dev.AlignedBuffer(256 * blockSize) })

// zeroBlockCsum is a zero block's checksum.
var zeroBlockCsum = engine.DataCsum(make([]byte, blockSize))

// writeZeroRuns writes runs (sorted) as zero extents, in writeback's
// batches and through its writeBatch (wbMu held, no other lock): each
// batch's extents are written before they are mapped, and the tree's size
// advances batch by batch up to size, over blocks that are all written.
func (s *Store) writeZeroRuns(in *inode, runs []wbRun, size uint64) error {
	maxRun := uint64(min(s.maxExtentBlocks(), len(zeroExtentBytes())/blockSize))
	var blocks []uint64
	flush := func(last bool) error {
		if len(blocks) == 0 {
			return nil
		}
		for _, b := range planBatches(blocks, maxRun) {
			exts := make([]newExtent, len(b.runs))
			for i, r := range b.runs {
				sums := make([]byte, r.count*engine.CsumSize)
				for j := range r.count {
					engine.PutCsum(sums, int(j), zeroBlockCsum)
				}
				exts[i] = newExtent{off: r.first * blockSize, length: r.count * blockSize,
					buf: zeroExtentBytes()[:r.count*blockSize], sums: sums}
			}
			b.last = b.last && last
			writes := 0
			if err := s.writeBatch(in, exts, b.end(size), size, &writes); err != nil {
				return err
			}
		}
		blocks = blocks[:0]
		return nil
	}
	// Runs become block lists a writeback batch long at a time: the
	// range may be far longer than memory should hold as a list.
	for i, r := range runs {
		for b := r.first; b < r.first+r.count; b++ {
			blocks = append(blocks, b)
			if len(blocks) == wbChunkBytes/blockSize {
				if err := flush(false); err != nil {
					return err
				}
			}
		}
		if i == len(runs)-1 {
			if err := flush(true); err != nil {
				return err
			}
		}
	}
	return nil
}

// punchHole frees [start, end) of in (FALLOC_FL_PUNCH_HOLE with
// KEEP_SIZE): the whole blocks' extents go (their space returns with the
// next commit) with their buffered and cached pages, and the partial
// blocks at the edges are zeroed over the range in dirty pages. The
// transaction takes no metadata reservation, as a truncate that shrinks:
// punching whole blocks works on a full device. A partial edge needs a
// buffered page, so a block of space, like any write (ENOSPC, before any
// change).
func (s *Store) punchHole(in *inode, start, end uint64) (_ Attr, err error) {
	// The edge pages are reserved before any lock: the reservation may
	// wait for writeback, which must not wait for this inode's wbMu.
	// Only an unaligned bound can need one: a punch of whole blocks
	// reserves nothing, and so works on a full device.
	edgesMax := 0
	for _, at := range []uint64{start, end} {
		if at%blockSize != 0 {
			edgesMax++
		}
	}
	if edgesMax > 0 {
		if err := s.wb.reserve(edgesMax, true); err != nil {
			return Attr{}, err
		}
	}
	used := 0
	defer func() { s.wb.unreserve(edgesMax - used) }()
	in.wbMu.Lock()
	defer in.wbMu.Unlock()
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.deleted.Load() {
		return Attr{}, syscall.ENOENT
	}
	end = min(end, in.size)
	if start >= end {
		return s.punchDone(in, nil)
	}
	// Whole blocks: from the first block that starts in the range to the
	// last that ends in it — or, at the end of the file, the last block
	// (its bytes past the size are nobody's).
	first := (start + blockSize - 1) / blockSize
	last := end / blockSize
	if end == in.size {
		last = (end + blockSize - 1) / blockSize
	}
	edges := []uint64{}
	if start%blockSize != 0 {
		edges = append(edges, start/blockSize)
	}
	if b := end / blockSize; end%blockSize != 0 && end < in.size && (len(edges) == 0 || edges[0] != b) {
		edges = append(edges, b)
	}
	for _, b := range edges {
		p, created, err := s.dirtyPageLocked(in, b, false)
		if created {
			used++
		}
		if err != nil {
			return Attr{}, err
		}
		bs := b * blockSize
		clear(p.buf[max(start, bs)-bs : min(end, bs+blockSize)-bs])
	}
	if first >= last {
		return s.punchDone(in, nil)
	}
	tr, err := s.startMeta(0)
	if err != nil {
		return Attr{}, err
	}
	defer tr.End()
	defer s.abortOnError(&err)
	s.dropPageRange(in, first, last)
	in.extMu.Lock()
	freed, err := s.dropExtents(tr, in, first*blockSize, last*blockSize)
	in.extMu.Unlock()
	in.item.Nbytes -= min(freed, in.item.Nbytes)
	if err != nil {
		return Attr{}, err
	}
	// The punch may have dropped the last buffered pages, whose writeback
	// would have moved the tree's size up to the file's: it moves here,
	// as truncate's does. Every block between the two is a hole now or
	// was never written past the tree's size (an old last block's zeroed
	// tail page, if it went, went with its extent).
	if in.pages.empty() {
		in.diskSize = in.size
	}
	return s.punchDone(in, tr)
}

// punchDone stamps the times and writes the item, in tr or, when nothing
// was freed, in a transaction of its own (in.mu held).
func (s *Store) punchDone(in *inode, tr *engine.Trans) (_ Attr, err error) {
	if tr == nil {
		tr, err = s.startMeta(0)
		if err != nil {
			return Attr{}, err
		}
		defer tr.End()
		defer s.abortOnError(&err)
	}
	t := now()
	in.item.Mtime, in.item.Ctime = t, t
	if err := s.writeItem(tr, in); err != nil {
		return Attr{}, err
	}
	return in.attrLocked(), nil
}
