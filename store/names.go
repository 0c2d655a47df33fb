package store

import (
	"slices"
	"strings"
	"syscall"

	"ustore/engine"
)

// checkName validates one directory entry name: 1–255 bytes, no '/', no
// NUL, not "." or "..".
func checkName(name string) error {
	switch {
	case name == "":
		return syscall.EINVAL
	case len(name) > engine.NameMax:
		return syscall.ENAMETOOLONG
	case name == "." || name == "..":
		return syscall.EINVAL
	case strings.ContainsAny(name, "/\x00"):
		return syscall.EINVAL
	}
	return nil
}

// inodeRefs returns ino's names, from its INODE_REF items, as entries
// whose Child is the parent directory (names copied out of the leaf).
func (s *Store) inodeRefs(ino Ino) ([]engine.DirEntry, error) {
	var out []engine.DirEntry
	var derr error
	err := s.fs.Iterate(refKey(ino, 0), func(k engine.Key, b []byte) bool {
		if k.Ino() != ino || k.Type != engine.TypeInodeRef {
			return false
		}
		es, err := engine.DecodeDirEntries(b)
		if err != nil {
			derr = err
			return false
		}
		for _, e := range es {
			e.Name = slices.Clone(e.Name)
			e.Child = refParent(k)
			out = append(out, e)
		}
		return true
	})
	if err == nil {
		err = derr
	}
	return out, err
}
