package store

import (
	"fmt"
	"path"
	"slices"

	"ustore/engine"
)

// pathsDepthMax bounds the walk up from a directory to the root: a cycle
// or a chain of damaged back-references ends the path with ".../" rather
// than looping.
const pathsDepthMax = 4096

// pathsOf returns every path of inode ino (one per name, so several for a
// file with hard links), from its INODE_REF items and its directories'
// back-references: for reports (scrub) that name a file, not an inode.
func (s *Store) pathsOf(ino Ino) ([]string, error) {
	if ino == RootIno {
		return []string{"/"}, nil
	}
	refs, err := s.inodeRefs(ino)
	var out []string
	for _, r := range refs {
		dir, derr := s.dirPath(r.Child)
		if derr != nil && err == nil {
			err = derr
		}
		out = append(out, path.Join(dir, string(r.Name)))
	}
	slices.Sort(out)
	return out, err
}

// dirPath returns directory dir's path, walking its back-references up
// to the root; a directory whose back-reference cannot be read starts the
// path as "?<ino>".
func (s *Store) dirPath(dir Ino) (string, error) {
	var names []string
	joined := func(head string) string {
		slices.Reverse(names)
		return path.Join(append([]string{head}, names...)...)
	}
	for range pathsDepthMax {
		if dir == RootIno {
			return joined("/"), nil
		}
		parent, name, err := s.dirRef(dir)
		if err != nil {
			return joined("?" + dir.String()), err
		}
		names = append(names, name)
		dir = parent
	}
	return joined("..."), nil
}

// dirRef returns a directory's parent and its name there, from its one
// INODE_REF item.
func (s *Store) dirRef(dir Ino) (parent Ino, name string, err error) {
	refs, err := s.inodeRefs(dir)
	if err != nil {
		return 0, "", err
	}
	if len(refs) == 0 {
		return 0, "", fmt.Errorf("%w: directory %d has no parent", engine.ErrCorruption, dir)
	}
	return refs[0].Child, string(refs[0].Name), nil
}
