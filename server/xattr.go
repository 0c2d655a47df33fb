package server

import (
	"syscall"

	"ustore/proto"
	"ustore/store"
)

// The extended attribute ops. getxattr and listxattr answer as their
// syscalls: a request's Size 0 asks for the size alone, a nonzero Size too
// small for the value (the list) is ERANGE.

func getXattr(st *store.Store, r *proto.GetXattr) (proto.Reply, *[]byte, error) {
	v, err := st.GetXattr(store.Ino(r.Ino), r.Name)
	if err != nil {
		return nil, nil, err
	}
	return sizedXattrReply(v, r.Size)
}

func listXattr(st *store.Store, r *proto.ListXattr) (proto.Reply, *[]byte, error) {
	names, err := st.ListXattr(store.Ino(r.Ino))
	if err != nil {
		return nil, nil, err
	}
	var list []byte
	for _, n := range names {
		list = append(append(list, n...), 0)
	}
	if len(list) > proto.XattrSizeMax {
		return nil, nil, syscall.E2BIG // as listxattr(2) past XATTR_LIST_MAX
	}
	return sizedXattrReply(list, r.Size)
}

// sizedXattrReply answers b for a buffer of size bytes.
func sizedXattrReply(b []byte, size uint32) (proto.Reply, *[]byte, error) {
	switch {
	case size == 0:
		return &proto.XattrReply{Size: uint32(len(b))}, nil, nil
	case len(b) > int(size):
		return nil, nil, syscall.ERANGE
	}
	return &proto.XattrReply{Size: uint32(len(b)), Data: b}, nil, nil
}
