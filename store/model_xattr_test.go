package store

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"syscall"
)

// The model's extended attributes (TestModel): set with each flag,
// remove, get and list, against a map per inode; verifyAll compares every
// reachable inode's set.

var modelXattrNames = []string{"user.a", "user.b", "user.c", "user." + strings.Repeat("x", 250)}

func (r *modelRun) xattrName() string {
	if r.rng.IntN(30) == 0 {
		return []string{"", "user.", "trusted.a", "security.b", "other.c", "user." + strings.Repeat("y", 251)}[r.rng.IntN(6)]
	}
	return modelXattrNames[r.rng.IntN(len(modelXattrNames))]
}

// modelXattrErr is what the store answers for name before it looks at the
// inode's attributes (get maps another namespace to ENODATA).
func modelXattrErr(name string, get bool) syscall.Errno {
	switch {
	case name == "" || len(name) > 255:
		return syscall.ERANGE
	case !strings.HasPrefix(name, "user."):
		if get && (strings.HasPrefix(name, "trusted.") || strings.HasPrefix(name, "security.")) {
			return syscall.ENODATA
		}
		return syscall.EOPNOTSUPP
	case name == "user.":
		return syscall.EINVAL
	}
	return 0
}

func (r *modelRun) opSetXattr() {
	ino, name := r.pick(r.rng.IntN(3) == 0), r.xattrName()
	flags := uint32(r.rng.IntN(3))
	value := r.data(r.rng.IntN(600))
	if r.rng.IntN(20) == 0 {
		value = r.data(r.s.XattrValueMax(len(name)) + r.rng.IntN(3)) // at the limit and past it
	}
	if r.rng.IntN(10) == 0 {
		value = nil
	}
	n := r.m.nodes[ino]
	want := modelXattrErr(name, false)
	if want == 0 {
		_, has := modelXattrs(n)[name]
		switch {
		case n == nil:
			want = syscall.ENOENT
		case n.link:
			want = syscall.EPERM // user.* is for files and directories (xattr(7))
		case len(value)+len(name)+4 > r.s.Engine().ItemDataMax():
			want = syscall.ENOSPC
		case has && flags&XattrCreate != 0:
			want = syscall.EEXIST
		case !has && flags&XattrReplace != 0:
			want = syscall.ENODATA
		}
	}
	what := fmt.Sprintf("setxattr(%d, %q, %d bytes, flags %d)", ino, name, len(value), flags)
	err := r.s.SetXattr(ino, name, value, flags)
	r.logf("%s = %v", what, err)
	r.check(what, err, want)
	if err == nil {
		if n.xattrs == nil {
			n.xattrs = map[string]string{}
		}
		n.xattrs[name] = string(value)
		r.changed[ino] = true
	}
}

func (r *modelRun) opRemoveXattr() {
	ino, name := r.pick(r.rng.IntN(3) == 0), r.xattrName()
	n := r.m.nodes[ino]
	want := modelXattrErr(name, false)
	if want == 0 {
		if _, has := modelXattrs(n)[name]; n == nil {
			want = syscall.ENOENT
		} else if n.link {
			want = syscall.EPERM
		} else if !has {
			want = syscall.ENODATA
		}
	}
	what := fmt.Sprintf("removexattr(%d, %q)", ino, name)
	err := r.s.RemoveXattr(ino, name)
	r.logf("%s = %v", what, err)
	r.check(what, err, want)
	if err == nil {
		delete(n.xattrs, name)
	}
}

func (r *modelRun) opGetXattr() {
	ino, name := r.pick(r.rng.IntN(3) == 0), r.xattrName()
	n := r.m.nodes[ino]
	want := modelXattrErr(name, true)
	v, has := modelXattrs(n)[name]
	if want == 0 {
		if n == nil {
			want = syscall.ENOENT
		} else if !has {
			want = syscall.ENODATA
		}
	}
	what := fmt.Sprintf("getxattr(%d, %q)", ino, name)
	got, err := r.s.GetXattr(ino, name)
	r.logf("%s = %d bytes, %v", what, len(got), err)
	r.check(what, err, want)
	if err == nil && string(got) != v {
		r.fatalf("%s: %d bytes, want %d", what, len(got), len(v))
	}
}

// modelXattrs is n's attributes, none for a missing inode.
func modelXattrs(n *modelNode) map[string]string {
	if n == nil {
		return nil
	}
	return n.xattrs
}

// compareXattrs requires that ino's attributes are the model's.
func (r *modelRun) compareXattrs(what string, ino Ino) {
	names, err := r.s.ListXattr(ino)
	if err != nil {
		r.fatalf("%s: listxattr: %v", what, err)
	}
	want := r.m.nodes[ino].xattrs
	slices.Sort(names)
	if !slices.Equal(names, slices.Sorted(maps.Keys(want))) {
		r.fatalf("%s: attributes %q, want %q", what, names, slices.Sorted(maps.Keys(want)))
	}
	for _, name := range names {
		v, err := r.s.GetXattr(ino, name)
		if err != nil || string(v) != want[name] {
			r.fatalf("%s: %s: %d bytes (%v), want %d", what, name, len(v), err, len(want[name]))
		}
	}
}
