package server

import (
	"fmt"
	"net"
	"slices"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// peerCred is who is on the other end of a connection, as the kernel saw it
// at connect(2): SO_PEERCRED's pid, uid and primary gid, and SO_PEERGROUPS'
// supplementary groups (Linux 4.13+; empty where unavailable).
type peerCred struct {
	PID    int32
	UID    uint32
	GID    uint32
	Groups []uint32
}

// peerGroupsMax bounds the supplementary groups read (NGROUPS_MAX is
// 65,536; a peer with more than this many is matched on the first ones).
const peerGroupsMax = 1024

// peerCredOf reads c's peer credentials.
func peerCredOf(c *net.UnixConn) (peerCred, error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return peerCred{}, err
	}
	var p peerCred
	var serr error
	err = rc.Control(func(fd uintptr) {
		var uc *unix.Ucred
		uc, serr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
		if serr != nil {
			return
		}
		p = peerCred{PID: uc.Pid, UID: uc.Uid, GID: uc.Gid}
		p.Groups = peerGroups(int(fd))
	})
	if err == nil {
		err = serr
	}
	if err != nil {
		return peerCred{}, fmt.Errorf("server: SO_PEERCRED: %w", err)
	}
	return p, nil
}

// peerGroups reads SO_PEERGROUPS, which x/sys/unix has no helper for: an
// array of gid_t. Any failure (an old kernel) gives no groups: the primary
// gid still counts.
func peerGroups(fd int) []uint32 {
	buf := make([]uint32, peerGroupsMax)
	n := uint32(len(buf) * 4)
	_, _, e := syscall.Syscall6(syscall.SYS_GETSOCKOPT, uintptr(fd), unix.SOL_SOCKET, unix.SO_PEERGROUPS,
		uintptr(unsafe.Pointer(&buf[0])), uintptr(unsafe.Pointer(&n)), 0)
	if e != 0 {
		return nil
	}
	return buf[:min(int(n/4), len(buf))]
}

// allowList says which peers may talk to the server: a peer whose uid is
// in uids, or whose primary or supplementary gid is in gids.
type allowList struct {
	uids, gids []uint32
}

func (a allowList) allows(p peerCred) bool {
	if slices.Contains(a.uids, p.UID) || slices.Contains(a.gids, p.GID) {
		return true
	}
	for _, g := range p.Groups {
		if slices.Contains(a.gids, g) {
			return true
		}
	}
	return false
}
