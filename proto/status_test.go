package proto_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"syscall"
	"testing"

	"ustore/proto"
)

func TestStatus_ErrnoRoundTrip(t *testing.T) {
	names := map[string]bool{}
	errnos := map[syscall.Errno]bool{}
	var s proto.Status
	for s = 0; s.Known(); s++ {
		e := s.Errno()
		if got := proto.StatusFromErrno(e); got != s {
			t.Errorf("%v → %v → %v", s, e, got)
		}
		if names[s.String()] || errnos[e] {
			t.Errorf("%v: name or errno used twice", s)
		}
		names[s.String()], errnos[e] = true, true
	}
	if s != 30 {
		t.Fatalf("%d statuses: update PROTOCOL.md's table", s)
	}
	if proto.Status(999).Errno() != syscall.EIO || proto.Status(999).String() != "status(999)" {
		t.Fatal("an unknown status")
	}
	if proto.StatusFromErrno(syscall.ENOTTY) != proto.StatusIO {
		t.Fatal("an unmapped errno is not EIO")
	}
	if proto.StatusFromErrno(0) != proto.StatusOK {
		t.Fatal("errno 0 is not OK")
	}
}

// TestStatusError_Is: a remote error works with errors.Is as a local one.
func TestStatusError_Is(t *testing.T) {
	for _, c := range []struct {
		s      proto.Status
		target error
	}{
		{proto.StatusNotExist, fs.ErrNotExist},
		{proto.StatusNotExist, syscall.ENOENT},
		{proto.StatusExist, fs.ErrExist},
		{proto.StatusPerm, fs.ErrPermission},
		{proto.StatusAccess, fs.ErrPermission},
		{proto.StatusNotEmpty, syscall.ENOTEMPTY},
		{proto.StatusBusy, syscall.EBUSY},
		{proto.StatusVersion, syscall.EPROTONOSUPPORT},
	} {
		err := fmt.Errorf("client: %w", proto.Err(c.s, "lookup 256/x"))
		if !errors.Is(err, c.target) {
			t.Errorf("%v is not %v", c.s, c.target)
		}
	}
	if proto.Err(proto.StatusOK, "") != nil {
		t.Fatal("Err(OK) is not nil")
	}
	if got := proto.Err(proto.StatusNotExist, "").Error(); got != "ENOENT: no such file or directory" {
		t.Fatalf("message %q", got)
	}
}

func TestStatusOf(t *testing.T) {
	_, malformed := proto.DecodeRequest(proto.OpStat, nil)
	_, unknown := proto.DecodeRequest(77, nil)
	_, version := proto.Negotiate(proto.Hello{VersionMin: 2, VersionMax: 3})
	for _, c := range []struct {
		err  error
		want proto.Status
	}{
		{nil, proto.StatusOK},
		{&fs.PathError{Op: "lookup", Path: "256/x", Err: syscall.ENOENT}, proto.StatusNotExist},
		{&fs.PathError{Op: "write", Path: "257", Err: syscall.ENOSPC}, proto.StatusNoSpace},
		{fmt.Errorf("op: %w", syscall.EROFS), proto.StatusReadOnly},
		{malformed, proto.StatusBadMessage},
		{unknown, proto.StatusNoSys},
		{version, proto.StatusVersion},
		{proto.Err(proto.StatusBusy, "x"), proto.StatusBusy},
		{context.Canceled, proto.StatusCanceled},
		{fmt.Errorf("fsync: %w", context.DeadlineExceeded), proto.StatusTimedOut},
		{errors.New("something else"), proto.StatusIO},
		{syscall.ENOTSUP, proto.StatusNotSupported},
		{syscall.ENOTTY, proto.StatusIO},
	} {
		if got := proto.StatusOf(c.err); got != c.want {
			t.Errorf("StatusOf(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}

func TestOp_String(t *testing.T) {
	want := map[proto.Op]string{1: "lookup", 2: "create", 3: "mkdir", 4: "link", 5: "unlink", 6: "rmdir", 7: "rename",
		8: "readdir", 9: "stat", 10: "setattr", 11: "statfs", 12: "write", 13: "read", 14: "fsync", 15: "sync",
		16: "resolve", 17: "put", 18: "get", 19: "symlink", 20: "readlink",
		21: "getxattr", 22: "setxattr", 23: "listxattr", 24: "removexattr", 25: "open", 26: "release",
		27: "fallocate", 28: "rename2"}
	for op := proto.Op(0); op < 255; op++ {
		name, ok := want[op]
		if op.Known() != ok || (ok && op.String() != name) {
			t.Errorf("op %d is %q (known %v), want %q", op, op.String(), op.Known(), name)
		}
	}
	if proto.Op(0).Known() || proto.Op(200).Known() || proto.Op(200).String() != "op(200)" {
		t.Fatal("ops 0 and 200")
	}
}
