package proto

import (
	"syscall"
	"time"
)

// Timespec is a time as the store keeps it: seconds and nanoseconds since
// the Unix epoch, UTC. It is not a time.Time on the wire or in the types:
// a time.Time carries a location and a monotonic reading that a round trip
// cannot keep. On the wire: sec i64, nsec u32 (< 1e9).
type Timespec struct {
	Sec  int64
	Nsec uint32
}

// TimespecOf converts t.
func TimespecOf(t time.Time) Timespec {
	return Timespec{Sec: t.Unix(), Nsec: uint32(t.Nanosecond())}
}

// Time converts ts.
func (ts Timespec) Time() time.Time { return time.Unix(ts.Sec, int64(ts.Nsec)) }

func (ts Timespec) valid() bool { return ts.Nsec < 1e9 }

// Attr is an inode's attributes, as stat returns them: the reply of
// lookup, create, mkdir, link, stat, setattr, resolve and put. Payload (96
// bytes): ino u64, mode u32, nlink u32, uid u32, gid u32, size u64,
// blocks u64, generation u64, atime, mtime, ctime, btime (timespec each).
type Attr struct {
	Ino        uint64
	Mode       uint32 // st_mode: file type and permission bits
	Nlink      uint32
	UID, GID   uint32
	Size       uint64
	Blocks     uint64 // bytes allocated (not st_blocks' 512-byte units)
	Generation uint64
	Atime      Timespec
	Mtime      Timespec
	Ctime      Timespec
	Btime      Timespec // birth time
}

// IsDir reports whether the inode is a directory (S_IFDIR).
func (a *Attr) IsDir() bool { return a.Mode&syscall.S_IFMT == syscall.S_IFDIR }

func (a *Attr) Validate() error {
	if !a.Atime.valid() || !a.Mtime.valid() || !a.Ctime.valid() || !a.Btime.valid() {
		return invalid(syscall.EINVAL, "attr: nanoseconds not below 1e9")
	}
	return nil
}

func (*Attr) kind() replyKind { return replyAttr }

func (a *Attr) decode(d *decoder) {
	a.Ino, a.Mode, a.Nlink = d.u64("ino"), d.u32("mode"), d.u32("nlink")
	a.UID, a.GID = d.u32("uid"), d.u32("gid")
	a.Size, a.Blocks, a.Generation = d.u64("size"), d.u64("blocks"), d.u64("generation")
	a.Atime, a.Mtime = d.timespec("atime", "atime nanoseconds"), d.timespec("mtime", "mtime nanoseconds")
	a.Ctime, a.Btime = d.timespec("ctime", "ctime nanoseconds"), d.timespec("btime", "btime nanoseconds")
}

func (a *Attr) appendPayload(b []byte) []byte {
	b = appendU32(appendU32(appendU64(b, a.Ino), a.Mode), a.Nlink)
	b = appendU32(appendU32(b, a.UID), a.GID)
	b = appendU64(appendU64(appendU64(b, a.Size), a.Blocks), a.Generation)
	b = appendTimespec(appendTimespec(b, a.Atime), a.Mtime)
	return appendTimespec(appendTimespec(b, a.Ctime), a.Btime)
}
