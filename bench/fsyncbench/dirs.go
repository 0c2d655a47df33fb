package fsyncbench

import (
	"context"
	"fmt"
	"path"
	"strings"

	"ustore/client"
)

// Dirs resolves a workload's names to inodes over one connection, keeping
// the directories it has looked up: a workload's names sit in a few
// directories, so an op on a name is one request, as a system call on a
// path whose directories the kernel has cached. bench/metabench's ustore
// target uses it too.
type Dirs struct {
	ctx  context.Context
	c    *client.Client
	inos map[string]uint64 // directory (CleanName form) → inode
}

// NewDirs returns the resolver of names under root, a directory of the
// store that must exist ("" or "/" for the store's root).
func NewDirs(ctx context.Context, c *client.Client, root string) (*Dirs, error) {
	ino := uint64(client.RootIno)
	if r := strings.Trim(root, "/"); r != "" {
		a, err := c.Resolve(ctx, "/"+r)
		if err != nil {
			return nil, fmt.Errorf("root %s: %w", root, err)
		}
		ino = a.Ino
	}
	return &Dirs{ctx: ctx, c: c, inos: map[string]uint64{"": ino}}, nil
}

// CleanName is name relative to the root, with no leading, trailing or
// doubled slashes: the form Dirs keys its directories by.
func CleanName(name string) string { return strings.Trim(path.Clean("/"+name), "/") }

// Parent returns the inode of name's directory and name's last element.
func (d *Dirs) Parent(name string) (uint64, string, error) {
	dir, base := path.Split(CleanName(name))
	ino, err := d.dir(strings.TrimSuffix(dir, "/"))
	return ino, base, err
}

// Dir returns the inode of directory name.
func (d *Dirs) Dir(name string) (uint64, error) { return d.dir(CleanName(name)) }

// Made records directory name, just made, as inode ino.
func (d *Dirs) Made(name string, ino uint64) { d.inos[CleanName(name)] = ino }

// Removed forgets directory name, being removed.
func (d *Dirs) Removed(name string) { delete(d.inos, CleanName(name)) }

func (d *Dirs) dir(p string) (uint64, error) {
	if ino, ok := d.inos[p]; ok {
		return ino, nil
	}
	pi, base, err := d.Parent(p)
	if err != nil {
		return 0, err
	}
	a, err := d.c.Lookup(d.ctx, pi, base)
	if err != nil {
		return 0, err
	}
	d.inos[p] = a.Ino
	return a.Ino, nil
}
