package logtree

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"time"

	"ustore/engine"
	"ustore/internal/assert"
)

// Target applies a log's items to the filesystem; the store implements it.
// Replay calls it stage by stage, in btrfs's order (tree-log.c: pin, replay
// inodes, replay directory indexes, replay everything else), all in one
// transaction handle.
type Target interface {
	// ReplayInode puts a logged inode item in place, creating the inode.
	ReplayInode(tr *engine.Trans, ino engine.Ino, item engine.InodeItem, flags LogFlags) error
	// ReplayDirRange makes dir's entries with an index in [lo, hi) exactly
	// entries.
	ReplayDirRange(tr *engine.Trans, dir engine.Ino, lo, hi uint64, entries []engine.DirEntry) error
	// ReplayNames makes ino's names exactly refs (parent → its entries
	// there, Child holding the parent).
	ReplayNames(tr *engine.Trans, ino engine.Ino, refs []engine.DirEntry) error
	// ReplayXattrs makes ino's extended attributes exactly xattrs.
	ReplayXattrs(tr *engine.Trans, ino engine.Ino, xattrs []engine.XattrEntry) error
	// ReplayFileRange makes ino's extents in [start, end) exactly exts.
	ReplayFileRange(tr *engine.Trans, ino engine.Ino, start, end uint64, exts []Extent) error
	// ReplayCsums puts the checksums of the blocks from start in place.
	ReplayCsums(tr *engine.Trans, start uint64, sums []byte) error
	// ReplayDone fixes what the stages leave to it: link counts, directory
	// sizes, byte counts, inodes left without a name.
	ReplayDone(tr *engine.Trans) error
}

// Extent is a logged EXTENT_DATA item.
type Extent struct {
	Off  uint64
	Item engine.FileExtent
}

// Report says what replay did.
type Report struct {
	Found         bool          // the log chain held a record
	LogGeneration engine.LogGen // its log generation
	Applied       bool
	Inodes        int
	DirRanges     int
	FileRanges    int
	DataBytes     uint64 // data that only the log referenced
	Lost          error  // the log was damaged and not applied
	Took          time.Duration
}

// logItems is a whole log, read before anything is applied.
type logItems struct {
	inodes    map[engine.Ino]engine.InodeItem
	flags     map[engine.Ino]LogFlags
	refs      map[engine.Ino][]engine.DirEntry
	xattrs    map[engine.Ino][]engine.XattrEntry
	dirRanges []dirRange
	dirIndex  map[engine.Ino][]engine.DirEntry // dir → logged DIR_INDEX entries
	files     map[engine.Ino][]fileLogRecord   // ino → its file log, in order
	csums     []csumRun
}

type dirRange struct {
	dir    engine.Ino
	lo, hi uint64
}
type csumRun struct {
	start uint64
	sums  []byte
}

// Replay applies the log the mounted superblock's log chain holds, if
// any, and commits: the commit's superblock names a new chain. Of the
// chain's newest record and the one before it (engine.ReplayLog), it
// applies the first whose log reads whole — every node verified, the
// record's digest of them matching — and whose logged data matches its
// logged checksums: the newest record's sync may not have completed (its
// record, nodes and data went out in one batch before one flush), the one
// before it had. If the newest fails and there is none before it, no log
// sync of the transaction completed: nothing is applied, and nothing is
// lost. If both fail, the log is damaged: that is reported in the Report
// (Lost) and the store stays at its last commit. An error means the log
// could not be applied and nothing was committed.
func Replay(ctx context.Context, e *engine.Engine, target Target, log *slog.Logger) (Report, error) {
	start := time.Now()
	cands, err := e.ReplayLog()
	rep := Report{Found: len(cands) > 0 || err != nil}
	if !rep.Found {
		return rep, nil
	}
	if len(cands) > 0 { // none when the chain could not be read
		rep.LogGeneration = cands[0].Gen
	}
	tr, serr := e.Start()
	if serr != nil {
		return rep, serr
	}
	var items *logItems
	var chosen *engine.LogCandidate
	for i, c := range cands {
		if err != nil {
			break
		}
		cerr := e.CheckLog(c)
		if cerr == nil {
			items, cerr = readLog(c)
		}
		if cerr == nil {
			cerr = verifyData(e, items)
		}
		switch {
		case cerr == nil:
			chosen = c
		case i == 0:
			// The newest record's sync did not complete; the one
			// before it (if any) did.
			log.Info("logtree: the newest log sync did not complete; it was never acknowledged",
				"log_generation", c.Gen, "seq", c.Seq, "why", cerr)
			items = nil
			continue
		default:
			err = cerr
		}
		break
	}
	if err != nil {
		tr.End()
		rep.Lost = err
		log.Error("logtree: the fsync log is damaged and was not applied; the store is at its last commit, and fsyncs acknowledged after that commit are lost",
			"log_generation", rep.LogGeneration, "transaction", rep.LogGeneration.Transid(), "err", err)
		_, cerr := e.Commit(ctx)
		rep.Took = time.Since(start)
		return rep, cerr
	}
	if chosen == nil {
		// Only one record, whose sync did not complete: no fsync of the
		// log was acknowledged. The commit starts a new chain.
		tr.End()
		_, cerr := e.Commit(ctx)
		rep.Took = time.Since(start)
		return rep, cerr
	}
	rep.LogGeneration = chosen.Gen
	if err := e.ClaimLog(tr, chosen); err != nil {
		tr.End()
		rep.Lost = err
		log.Error("logtree: the fsync log's blocks are in use; it was not applied, the store is at its last commit, and fsyncs acknowledged after that commit are lost",
			"log_generation", rep.LogGeneration, "err", err)
		_, cerr := e.Commit(ctx)
		rep.Took = time.Since(start)
		return rep, cerr
	}
	assert.That(items != nil, "logtree: replay applies only a log read and verified whole (invariant 5)")
	if err := apply(e, tr, target, items, &rep); err != nil {
		tr.End()
		return rep, e.Abort(fmt.Errorf("logtree: replay: %w", err))
	}
	tr.End()
	if _, err := e.Commit(ctx); err != nil {
		return rep, err
	}
	rep.Applied = true
	rep.Took = time.Since(start)
	log.Info("logtree: replayed the fsync log", "log_generation", rep.LogGeneration, "inodes", rep.Inodes,
		"dir_ranges", rep.DirRanges, "file_ranges", rep.FileRanges, "data_bytes", rep.DataBytes, "took", rep.Took)
	return rep, nil
}

// verifyData checks every logged data block against its logged checksum.
func verifyData(e *engine.Engine, li *logItems) error {
	for _, c := range li.csums {
		if err := e.VerifyData(engine.Bytenr(c.start), c.sums); err != nil {
			return err
		}
	}
	return nil
}

// readLog reads every item of c's log: its checkpoint's tree with its
// deltas applied (delta.go).
func readLog(c *engine.LogCandidate) (*logItems, error) {
	li := &logItems{inodes: map[engine.Ino]engine.InodeItem{}, flags: map[engine.Ino]LogFlags{},
		refs: map[engine.Ino][]engine.DirEntry{}, xattrs: map[engine.Ino][]engine.XattrEntry{}, dirIndex: map[engine.Ino][]engine.DirEntry{}, files: map[engine.Ino][]fileLogRecord{}}
	var derr error
	err := iterateLog(c, func(k engine.Key, b []byte) bool {
		switch {
		case k.ObjectID == engine.CsumObjectID && k.Type == engine.TypeExtentCsum:
			li.csums = append(li.csums, csumRun{k.Offset, slices.Clone(b)})
		case k.Type == engine.TypeInodeItem:
			var it engine.InodeItem
			if it, derr = engine.DecodeInodeItem(b); derr == nil {
				li.inodes[k.Ino()] = it
			}
		case k.Type == TypeLogInode:
			if len(b) != 1 {
				derr = fmt.Errorf("%w: LOG_INODE item of %d bytes", engine.ErrCorruption, len(b))
			} else {
				li.flags[k.Ino()] = LogFlags(b[0])
			}
		case k.Type == engine.TypeInodeRef:
			var es []engine.DirEntry
			if es, derr = engine.DecodeDirEntries(b); derr == nil {
				for _, e := range es {
					e.Name = slices.Clone(e.Name)
					li.refs[k.Ino()] = append(li.refs[k.Ino()], e)
				}
			}
		case k.Type == engine.TypeXattrItem:
			var es []engine.XattrEntry
			if es, derr = engine.DecodeXattrEntries(slices.Clone(b)); derr == nil {
				li.xattrs[k.Ino()] = append(li.xattrs[k.Ino()], es...)
			}
		case k.Type == TypeDirLogIndex:
			var hi uint64
			if hi, derr = DecodeEnd(b); derr == nil {
				li.dirRanges = append(li.dirRanges, dirRange{k.Ino(), k.Offset, hi})
			}
		case k.Type == engine.TypeDirIndex:
			var es []engine.DirEntry
			if es, derr = engine.DecodeDirEntries(b); derr == nil && len(es) == 1 {
				es[0].Name = slices.Clone(es[0].Name)
				li.dirIndex[k.Ino()] = append(li.dirIndex[k.Ino()], es[0])
			} else if derr == nil {
				derr = fmt.Errorf("%w: DIR_INDEX item with %d entries", engine.ErrCorruption, len(es))
			}
		case k.Type == TypeLogFile:
			var r fileLogRecord
			if r, derr = decodeFileLog(b); derr == nil {
				if !r.isRange && len(li.files[k.Ino()]) == 0 {
					derr = fmt.Errorf("%w: file log of %d starts with an extent", engine.ErrCorruption, k.ObjectID)
				}
				li.files[k.Ino()] = append(li.files[k.Ino()], r)
			}
		default:
			derr = fmt.Errorf("%w: log item %v of an unknown type", engine.ErrCorruption, k)
		}
		return derr == nil
	})
	if err == nil {
		err = derr
	}
	return li, err
}

// apply runs the stages.
func apply(e *engine.Engine, tr *engine.Trans, target Target, li *logItems, rep *Report) error {
	// Stage 1, pin: the data only the log references (written after the
	// last commit) is free in the committed free space tree.
	// An extent logged twice (its range logged again) is claimed once:
	// the union of the logged disk ranges is.
	committed := e.CommittedGeneration()
	var data, claim []Extent
	for _, ino := range sortedKeys(li.files) {
		for _, r := range li.files[ino] {
			if !r.isRange && r.ext.Item.Type == engine.ExtentRegular {
				data = append(data, r.ext)
				if r.ext.Item.Generation > committed {
					claim = append(claim, r.ext)
				}
			}
		}
	}
	for _, x := range unionDisk(claim) {
		if err := e.ClaimData(tr, x.Item.DiskBytenr, x.Item.NumBytes); err != nil {
			return err
		}
		rep.DataBytes += x.Item.NumBytes
	}
	// Stage 2: inodes.
	inos := sortedKeys(li.inodes)
	for _, ino := range inos {
		if err := target.ReplayInode(tr, ino, li.inodes[ino], li.flags[ino]); err != nil {
			return fmt.Errorf("inode %d: %w", ino, err)
		}
	}
	rep.Inodes = len(inos)
	// Stage 3: directory indexes, additions and deletions.
	for _, r := range li.dirRanges {
		var in []engine.DirEntry
		for _, d := range li.dirIndex[r.dir] {
			if d.Index >= r.lo && d.Index < r.hi {
				in = append(in, d)
			}
		}
		if err := target.ReplayDirRange(tr, r.dir, r.lo, r.hi, in); err != nil {
			return fmt.Errorf("directory %d [%d, %d): %w", r.dir, r.lo, r.hi, err)
		}
	}
	rep.DirRanges = len(li.dirRanges)
	// Stage 4: everything else — names, extended attributes, file
	// ranges, checksums.
	for _, ino := range sortedKeys(li.flags) {
		if li.flags[ino]&LogNames != 0 {
			if err := target.ReplayNames(tr, ino, li.refs[ino]); err != nil {
				return fmt.Errorf("names of %d: %w", ino, err)
			}
		}
	}
	for ino := range li.xattrs {
		if li.flags[ino]&LogXattrs == 0 {
			return fmt.Errorf("%w: extended attributes of inode %d logged without LogXattrs", engine.ErrCorruption, ino)
		}
	}
	for _, ino := range sortedKeys(li.flags) {
		if li.flags[ino]&LogXattrs != 0 {
			if err := target.ReplayXattrs(tr, ino, li.xattrs[ino]); err != nil {
				return fmt.Errorf("extended attributes of %d: %w", ino, err)
			}
		}
	}
	// Checksums first, of every logged extent: a later range record that
	// replaces an extent deletes its checksums with it.
	data = unionDisk(data)
	for _, c := range li.csums {
		for _, run := range clipCsums(c, data) {
			if err := target.ReplayCsums(tr, run.start, run.sums); err != nil {
				return fmt.Errorf("checksums at %d: %w", run.start, err)
			}
		}
	}
	for _, ino := range sortedKeys(li.files) {
		recs := li.files[ino]
		for i := 0; i < len(recs); {
			r := recs[i]
			var exts []Extent
			for i++; i < len(recs) && !recs[i].isRange; i++ {
				exts = append(exts, recs[i].ext)
			}
			if err := target.ReplayFileRange(tr, ino, r.start, r.end, exts); err != nil {
				return fmt.Errorf("file %d [%d, %d): %w", ino, r.start, r.end, err)
			}
			rep.FileRanges++
		}
	}
	return target.ReplayDone(tr)
}

// unionDisk merges extents' disk ranges (returned as extents with only
// DiskBytenr and NumBytes meaningful), sorted.
func unionDisk(xs []Extent) []Extent {
	sort.Slice(xs, func(i, j int) bool { return xs[i].Item.DiskBytenr < xs[j].Item.DiskBytenr })
	var out []Extent
	for _, x := range xs {
		s, e := x.Item.DiskBytenr, x.Item.DiskEnd()
		if n := len(out); n > 0 && s <= out[n-1].Item.DiskEnd() {
			last := &out[n-1].Item
			last.NumBytes = uint64(max(last.DiskEnd(), e) - last.DiskBytenr)
			continue
		}
		out = append(out, Extent{Item: engine.FileExtent{Type: engine.ExtentRegular, DiskBytenr: s, NumBytes: uint64(e - s)}})
	}
	return out
}

// clipCsums returns the parts of c inside the disk ranges of data (sorted
// by disk bytenr).
func clipCsums(c csumRun, data []Extent) []csumRun {
	const bs = engine.SectorSize
	end := c.start + uint64(len(c.sums)/engine.CsumSize)*bs
	var out []csumRun
	for _, x := range data {
		s, e := max(c.start, uint64(x.Item.DiskBytenr)), min(end, uint64(x.Item.DiskEnd()))
		if s >= e {
			continue
		}
		i, j := (s-c.start)/bs*engine.CsumSize, (e-c.start)/bs*engine.CsumSize
		out = append(out, csumRun{s, c.sums[i:j]})
	}
	return out
}

func sortedKeys[V any](m map[engine.Ino]V) []engine.Ino {
	ks := make([]engine.Ino, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}
