package store

import (
	"errors"
	"fmt"
	"strings"
	"syscall"

	"ustore/engine"
	"ustore/logtree"
)

// A symbolic link is an inode of mode ModeLink|0777 whose target is one
// inline EXTENT_DATA item at offset 0, as btrfs keeps it: size and nbytes
// are the target's length, and there is no other extent. The target is
// written with the inode, in its transaction, and never changes; the
// store reads it only for Readlink and never follows it (path.go).

// pathMax is Linux's PATH_MAX: a target is at most PATH_MAX − 1 bytes, as
// the kernel's symlink(2) takes it (with its NUL).
const pathMax = 4096

// symlinkTargetMax is the longest target at a tree of the given item
// size limit: PATH_MAX − 1, or less where the target's inline extent would
// not fit one item — in the fs tree, and in the fsync log, which copies
// it as one extent record (logtree.InlineExtentRecordSize, the larger):
// 4,037 bytes at 16 KiB nodes, 965 at 4 KiB (docs/FORMAT.md).
func symlinkTargetMax(itemDataMax int) int {
	return min(pathMax-1, itemDataMax-logtree.InlineExtentRecordSize(0))
}

// No target is larger than an inline extent may be (a sector,
// engine.DecodeFileExtent): a compile-time check, the length negative
// otherwise.
var _ [engine.SectorSize - (pathMax - 1)]struct{}

// SymlinkTargetMax is the longest symbolic link target this store takes
// (ENAMETOOLONG past it): PATH_MAX − 1 bytes where the node size allows it.
func (s *Store) SymlinkTargetMax() int { return symlinkTargetMax(s.e.ItemDataMax()) }

// checkTarget checks a symbolic link's target as symlink(2) does: not
// empty (ENOENT), no NUL (a C string cannot hold one: EINVAL), and not
// longer than the store holds (ENAMETOOLONG).
func (s *Store) checkTarget(target string) error {
	switch {
	case target == "":
		return syscall.ENOENT
	case len(target) > s.SymlinkTargetMax():
		return syscall.ENAMETOOLONG
	case strings.IndexByte(target, 0) >= 0:
		return syscall.EINVAL
	}
	return nil
}

// Symlink makes a symbolic link name in dir pointing at target; EEXIST if
// the name exists. The target is not looked at beyond checkTarget: a link
// may dangle.
func (s *Store) Symlink(dir Ino, name, target string) (Attr, error) {
	a, err := s.symlink(dir, name, target)
	return a, opErr("symlink", name, err)
}

// symlink checks the target first, as Linux reads it (getname) before it
// looks at the name or the filesystem (EROFS).
func (s *Store) symlink(dir Ino, name, target string) (Attr, error) {
	if err := s.checkTarget(target); err != nil {
		return Attr{}, err
	}
	return s.makeInode(dir, name, ModeLink|0o777, target)
}

// targetExtent is a new link's target as its one inline extent's item
// (inserted in the batch of the link's items, makeInodeLocked).
func targetExtent(tr *engine.Trans, target string) []byte {
	x := engine.FileExtent{Generation: tr.ID(), Type: engine.ExtentInline, Data: []byte(target)}
	return x.Encode(nil)
}

// Readlink returns symbolic link ino's target; EINVAL if ino is not a
// symbolic link (as readlink(2)).
func (s *Store) Readlink(ino Ino) (string, error) {
	t, err := s.readlink(ino)
	return t, opErr("readlink", ino, err)
}

func (s *Store) readlink(ino Ino) (string, error) {
	in, err := s.getLive(ino)
	if err != nil {
		return "", err
	}
	defer s.itab.put(in)
	if !in.isLink() {
		return "", syscall.EINVAL
	}
	in.mu.Lock()
	size := in.size
	in.mu.Unlock()
	return s.linkTarget(ino, size)
}

// linkTarget reads a link's target from its inline extent, which must
// hold exactly size bytes.
func (s *Store) linkTarget(ino Ino, size uint64) (string, error) {
	b, err := s.fs.Lookup(extentKey(ino, 0))
	if errors.Is(err, engine.ErrNotFound) {
		return "", fmt.Errorf("%w: symbolic link %d has no target", engine.ErrCorruption, ino)
	}
	if err != nil {
		return "", err
	}
	x, err := engine.DecodeFileExtent(b)
	if err != nil {
		return "", err
	}
	if x.Type != engine.ExtentInline || x.NumBytes != size {
		return "", fmt.Errorf("%w: symbolic link %d: extent of type %d and %d bytes, size %d", engine.ErrCorruption, ino, x.Type, x.NumBytes, size)
	}
	return string(x.Data), nil
}
