package store

import (
	"syscall"
	"time"

	"ustore/engine"
)

// Stat returns inode ino's attributes.
func (s *Store) Stat(ino Ino) (Attr, error) {
	a, err := s.stat(ino)
	return a, opErr("stat", ino, err)
}

func (s *Store) stat(ino Ino) (Attr, error) {
	in, err := s.itab.get(ino)
	if err != nil {
		return Attr{}, err
	}
	defer s.itab.put(in)
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.deleted.Load() {
		return Attr{}, syscall.ENOENT
	}
	return in.attrLocked(), nil
}

// SetAttr changes what is set in a; the others stay. Size truncates or
// extends a file (EISDIR for a directory, EINVAL for a symbolic link). Atime and Mtime are clamped to
// [TimeSecMin, TimeSecMax] (times.go).
type SetAttr struct {
	Mode         *uint32 // permission bits only
	UID, GID     *uint32
	Size         *uint64
	Atime, Mtime *time.Time
}

// SetAttr changes inode ino's attributes and returns them.
func (s *Store) SetAttr(ino Ino, a SetAttr) (Attr, error) {
	r, err := s.setAttr(ino, a)
	return r, opErr("setattr", ino, err)
}

// Truncate sets a file's size.
func (s *Store) Truncate(ino Ino, size uint64) error {
	_, err := s.setAttr(ino, SetAttr{Size: &size})
	return opErr("truncate", ino, err)
}

func (s *Store) setAttr(ino Ino, a SetAttr) (_ Attr, err error) {
	if err := s.writable(); err != nil {
		return Attr{}, err
	}
	if err := s.makeRoom(); err != nil {
		return Attr{}, err
	}
	in, err := s.getLive(ino)
	if err != nil {
		return Attr{}, err
	}
	defer s.itab.put(in)
	if a.Size != nil {
		if err := in.regularOnly(); err != nil {
			return Attr{}, err
		}
		if *a.Size > MaxFileSize {
			return Attr{}, syscall.EFBIG
		}
		// Truncate changes extents: no writeback may run meanwhile.
		in.wbMu.Lock()
		defer in.wbMu.Unlock()
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.deleted.Load() {
		return Attr{}, syscall.ENOENT
	}
	var meta uint64
	if a.Size == nil || *a.Size >= in.size {
		meta = s.opMeta
	}
	if a.Size != nil {
		if err := s.growTailLocked(in, *a.Size); err != nil {
			return Attr{}, err
		}
	}
	tr, err := s.startMeta(meta)
	if err != nil {
		return Attr{}, err
	}
	defer tr.End()
	defer s.abortOnError(&err)
	t := now()
	if a.Size != nil {
		if err := s.truncateLocked(tr, in, *a.Size); err != nil {
			return Attr{}, err
		}
		in.item.Mtime = t
	}
	if a.Mode != nil {
		in.item.Mode = in.item.Mode&ModeType | *a.Mode&ModePerm
	}
	if a.UID != nil {
		in.item.UID = *a.UID
	}
	if a.GID != nil {
		in.item.GID = *a.GID
	}
	if a.Atime != nil {
		in.item.Atime = clampTime(*a.Atime)
	}
	if a.Mtime != nil {
		in.item.Mtime = clampTime(*a.Mtime)
	}
	in.item.Ctime = t
	if err := s.writeItem(tr, in); err != nil {
		return Attr{}, err
	}
	return in.attrLocked(), nil
}

// StatFS describes the store's space.
type StatFS struct {
	BlockSize   uint32
	Blocks      uint64 // device size in blocks
	BlocksFree  uint64 // free blocks, the metadata reserve included
	BlocksAvail uint64 // blocks new data may take
	NameMax     uint32
	DirtyBytes  int64 // buffered data not yet written back
}

// StatFS returns the store's space accounting.
func (s *Store) StatFS() StatFS {
	sp := s.e.Space()
	avail := uint64(0)
	if r := uint64(s.wb.reservedBytes()); sp.Available > r {
		avail = sp.Available - r
	}
	return StatFS{
		BlockSize: blockSize, Blocks: sp.Total / blockSize, BlocksFree: (sp.Free + sp.Pinned) / blockSize,
		BlocksAvail: avail / blockSize, NameMax: engine.NameMax, DirtyBytes: s.wb.dirtyBytes(),
	}
}

// DirEntry is one entry of a directory listing. Cookie resumes the listing
// after this entry.
type DirEntry struct {
	Name   string
	Ino    Ino
	Type   uint8 // TypeFile, TypeDir or TypeLink
	Cookie uint64
}

// ReadDir lists up to max entries of directory dir in creation order,
// starting after cookie (0: from the start). A listing resumed with the last
// entry's Cookie sees every entry that existed throughout exactly once, even
// if others are added or removed meanwhile. Fewer than max entries (or
// none) means the end.
func (s *Store) ReadDir(dir Ino, cookie uint64, max int) ([]DirEntry, error) {
	es, err := s.readDir(dir, cookie, max)
	return es, opErr("readdir", dir, err)
}

func (s *Store) readDir(dir Ino, cookie uint64, max int) ([]DirEntry, error) {
	if max <= 0 {
		return nil, syscall.EINVAL
	}
	d, err := s.getDir(dir)
	if err != nil {
		return nil, err
	}
	defer s.itab.put(d)
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.deleted.Load() {
		return nil, syscall.ENOENT
	}
	var out []DirEntry
	var derr error
	err = s.fs.Iterate(dirIndexKey(dir, cookie), func(k engine.Key, b []byte) bool {
		if k.Ino() != dir || k.Type != engine.TypeDirIndex {
			return false
		}
		es, err := engine.DecodeDirEntries(b)
		if err != nil || len(es) != 1 {
			derr = engine.ErrCorruption
			return false
		}
		out = append(out, DirEntry{Name: string(es[0].Name), Ino: es[0].Child, Type: es[0].Type, Cookie: k.Offset + 1})
		return len(out) < max
	})
	if err == nil {
		err = derr
	}
	return out, err
}
