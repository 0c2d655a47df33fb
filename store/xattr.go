package store

import (
	"errors"
	"slices"
	"strings"
	"syscall"

	"ustore/engine"
)

// Extended attributes (xattr(7)), the user namespace only: each is an
// entry of an XATTR_ITEM (ino, XATTR_ITEM, crc32c(name)), names whose
// hashes collide sharing the item as names share a DIR_ITEM (dir.go). A
// change rewrites the item whole, updates the inode's ctime and is tracked
// for fsync, which then logs the inode's whole attribute set
// (log_inode.go: logXattrs).

// setxattr(2)'s flags.
const (
	XattrCreate  = 1 // fail with EEXIST if the attribute exists
	XattrReplace = 2 // fail with ENODATA if it does not
)

// xattrUserPrefix is the one namespace the store keeps.
const xattrUserPrefix = "user."

// checkXattrName validates an attribute name as the VFS does: ERANGE for an
// empty name or one past XattrNameMax (import_xattr_name), EOPNOTSUPP for a
// namespace other than user (no handler), EINVAL for the bare prefix
// (xattr_resolve_name).
func checkXattrName(name string) error {
	switch {
	case name == "" || len(name) > engine.XattrNameMax:
		return syscall.ERANGE
	case !strings.HasPrefix(name, xattrUserPrefix):
		return syscall.EOPNOTSUPP
	case name == xattrUserPrefix:
		return syscall.EINVAL
	}
	return nil
}

// kernelXattrNamespace reports whether name is in a namespace Linux has a
// handler for besides user (xattr(7)).
func kernelXattrNamespace(name string) bool {
	for _, p := range []string{"security.", "trusted.", "system."} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

func xattrKey(ino Ino, name string) engine.Key {
	return engine.InoKey(ino, engine.TypeXattrItem, nameHash(name))
}

// XattrValueMax is the largest value of an attribute named with n bytes:
// what one leaf item holds (btrfs: BTRFS_MAX_XATTR_SIZE).
func (s *Store) XattrValueMax(n int) int { return engine.XattrValueRoom(s.e.ItemDataMax(), n) }

// SetXattr sets attribute name of inode ino to value. flags: XattrCreate
// (EEXIST if it exists), XattrReplace (ENODATA if it does not), 0 either
// way. E2BIG past the VFS's 64 KiB; ENOSPC past what one item holds
// (XattrValueMax) or when the attributes sharing its hash fill the item.
func (s *Store) SetXattr(ino Ino, name string, value []byte, flags uint32) error {
	return opErr("setxattr", ino, s.setXattr(ino, name, value, flags))
}

func (s *Store) setXattr(ino Ino, name string, value []byte, flags uint32) (err error) {
	if flags&^(XattrCreate|XattrReplace) != 0 {
		return syscall.EINVAL
	}
	if name == "" || len(name) > engine.XattrNameMax {
		return syscall.ERANGE
	}
	if len(value) > engine.XattrValueMax {
		return syscall.E2BIG
	}
	if err := checkXattrName(name); err != nil {
		return err
	}
	if err := s.writable(); err != nil {
		return err
	}
	return s.changeXattr(ino, name, func(es []engine.XattrEntry, i int) ([]engine.XattrEntry, error) {
		switch {
		case engine.XattrEntrySize(len(name), len(value)) > s.e.ItemDataMax():
			return nil, syscall.ENOSPC // before the flags' checks, as btrfs_setxattr
		case i >= 0 && flags&XattrCreate != 0:
			return nil, syscall.EEXIST
		case i < 0 && flags&XattrReplace != 0:
			return nil, syscall.ENODATA
		case i >= 0:
			es[i].Value = value
			return es, nil
		}
		return append(es, engine.XattrEntry{Name: []byte(name), Value: value}), nil
	})
}

// RemoveXattr removes attribute name of inode ino: ENODATA if it has none.
func (s *Store) RemoveXattr(ino Ino, name string) error {
	return opErr("removexattr", ino, s.removeXattr(ino, name))
}

func (s *Store) removeXattr(ino Ino, name string) error {
	if err := checkXattrName(name); err != nil {
		return err
	}
	if err := s.writable(); err != nil {
		return err
	}
	return s.changeXattr(ino, name, func(es []engine.XattrEntry, i int) ([]engine.XattrEntry, error) {
		if i < 0 {
			return nil, syscall.ENODATA
		}
		return slices.Delete(es, i, i+1), nil
	})
}

// changeXattr rewrites the item of name's hash on inode ino with what
// change makes of its entries (i: name's, -1 if absent); no entries left
// deletes the item. Everything that can fail is checked before the
// transaction handle (store invariant 2).
func (s *Store) changeXattr(ino Ino, name string, change func(es []engine.XattrEntry, i int) ([]engine.XattrEntry, error)) (err error) {
	if err := s.makeRoom(); err != nil {
		return err
	}
	in, err := s.getLive(ino)
	if err != nil {
		return err
	}
	defer s.itab.put(in)
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.deleted.Load() {
		return syscall.ENOENT
	}
	if t := in.item.Mode & ModeType; t != ModeFile && t != ModeDir {
		return syscall.EPERM // user attributes are for files and directories only (xattr(7))
	}
	key := xattrKey(ino, name)
	es, old, err := s.xattrItem(key)
	if err != nil {
		return err
	}
	i := slices.IndexFunc(es, func(e engine.XattrEntry) bool { return string(e.Name) == name })
	es, err = change(es, i)
	if err != nil {
		return err
	}
	b := engine.EncodeXattrEntries(nil, es...)
	if len(b) > s.e.ItemDataMax() {
		return syscall.ENOSPC // the attributes of this hash fill their item
	}
	tr, err := s.startMeta(s.opMeta)
	if err != nil {
		return err
	}
	defer tr.End()
	defer s.abortOnError(&err)
	if err := s.putXattrItem(tr, key, old, b); err != nil {
		return err
	}
	s.track.xattrsChanged(tr.ID(), ino)
	in.item.Ctime = now()
	return s.writeItem(tr, in)
}

// xattrItem returns the entries of the item at key (copied out of the
// leaf) and its size: none and 0 if there is no item.
func (s *Store) xattrItem(key engine.Key) ([]engine.XattrEntry, int, error) {
	b, err := s.fs.Lookup(key)
	if errors.Is(err, engine.ErrNotFound) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, err
	}
	b = slices.Clone(b)
	es, err := engine.DecodeXattrEntries(b)
	return es, len(b), err
}

// putXattrItem replaces the item at key, of old bytes (0: none), with b
// (empty: none).
func (s *Store) putXattrItem(tr *engine.Trans, key engine.Key, old int, b []byte) error {
	switch {
	case old == 0:
		return s.fs.InsertItem(tr, key, b)
	case len(b) == 0:
		return s.fs.DeleteItem(tr, key)
	case len(b) > old:
		if err := s.fs.ResizeItem(tr, key, len(b)); err != nil {
			return err
		}
		return s.fs.UpdateItem(tr, key, func(d []byte) { copy(d, b) })
	}
	if err := s.fs.UpdateItem(tr, key, func(d []byte) { copy(d, b) }); err != nil {
		return err
	}
	return s.fs.ResizeItem(tr, key, len(b))
}

// GetXattr returns the value of attribute name of inode ino: ENODATA if it
// has none, and for every name of the kernel's other namespaces (security,
// trusted, system), which the store keeps none of — as ext4 answers a
// security.capability it does not have; EOPNOTSUPP for a namespace Linux
// does not know.
func (s *Store) GetXattr(ino Ino, name string) ([]byte, error) {
	v, err := s.getXattr(ino, name)
	return v, opErr("getxattr", ino, err)
}

func (s *Store) getXattr(ino Ino, name string) ([]byte, error) {
	if err := checkXattrName(name); err != nil {
		if errors.Is(err, syscall.EOPNOTSUPP) && kernelXattrNamespace(name) {
			err = syscall.ENODATA // none of these is kept: none exists
		}
		return nil, err
	}
	in, err := s.getLive(ino)
	if err != nil {
		return nil, err
	}
	defer s.itab.put(in)
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.deleted.Load() {
		return nil, syscall.ENOENT
	}
	es, _, err := s.xattrItem(xattrKey(ino, name))
	if err != nil {
		return nil, err
	}
	for _, e := range es {
		if string(e.Name) == name {
			return e.Value, nil
		}
	}
	return nil, syscall.ENODATA
}

// ListXattr returns the names of inode ino's attributes, in key order
// (by hash).
func (s *Store) ListXattr(ino Ino) ([]string, error) {
	names, err := s.listXattr(ino)
	return names, opErr("listxattr", ino, err)
}

func (s *Store) listXattr(ino Ino) ([]string, error) {
	in, err := s.getLive(ino)
	if err != nil {
		return nil, err
	}
	defer s.itab.put(in)
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.deleted.Load() {
		return nil, syscall.ENOENT
	}
	es, err := s.xattrs(ino)
	names := make([]string, len(es))
	for i, e := range es {
		names[i] = string(e.Name)
	}
	return names, err
}

// xattrs returns every attribute of ino, copied out of the leaves, in key
// order.
func (s *Store) xattrs(ino Ino) ([]engine.XattrEntry, error) {
	var out []engine.XattrEntry
	var derr error
	err := s.fs.Iterate(engine.InoKey(ino, engine.TypeXattrItem, 0), func(k engine.Key, b []byte) bool {
		if k.Ino() != ino || k.Type != engine.TypeXattrItem {
			return false
		}
		es, err := engine.DecodeXattrEntries(slices.Clone(b))
		if err != nil {
			derr = err
			return false
		}
		out = append(out, es...)
		return true
	})
	if err == nil {
		err = derr
	}
	return out, err
}
