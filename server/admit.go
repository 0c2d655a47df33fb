package server

import "slices"

// Admission: who gets one of the ConnMax connection slots. One user must
// not be able to lock the others out by holding connections (1024 idle
// connections after the hello did), and an administrator must always be
// able to get in to see what is wrong.
//
//	peer                       connections of the peer's uid (this one included)   verdict
//	an admin (AdminUIDs:       any                                                  admitted (only ConnMax bounds it)
//	root, the server's uid)
//	any other uid              unprivileged total ≥ ConnMax − ConnReserved          dropped at once
//	                           ≤ ConnPerUIDMax                                      admitted
//	                           ≤ 2 × ConnPerUIDMax                                  refused: hello reply EBUSY
//	                           more                                                 dropped at once
//
// A refused connection is counted while its hello is read (so the refusal
// reaches the client: a socket closed with unread data resets), which is
// why refusals are bounded too; past that bound the server closes without
// a word. Counts include connections in every phase, from accept to close,
// so no phase escapes them: an unprivileged uid holds at most
// 2 × ConnPerUIDMax slots, and the unprivileged together never hold the
// ConnReserved slots kept for the privileged.

// admission is the verdict on a new connection.
type admission int

const (
	admitted admission = iota
	refusedBusy
	dropped
)

// privilegedLocked reports whether uid may use the reserved slots and is
// exempt from the per-uid limit: one of Options.AdminUIDs (by default root
// and the server's own uid).
func (s *Server) privilegedLocked(uid uint32) bool {
	return slices.Contains(s.admins, uid)
}

// admit counts a new connection of uid and says what to do with it. When
// counted, leave must be called as the connection ends.
func (s *Server) admit(uid uint32) (v admission, counted bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.privilegedLocked(uid) {
		return admitted, false
	}
	if s.unprivConns >= s.opts.ConnMax-s.opts.ConnReserved {
		return dropped, false
	}
	n := s.uidConns[uid] + 1
	if n > 2*s.opts.ConnPerUIDMax {
		return dropped, false
	}
	s.uidConns[uid] = n
	s.unprivConns++
	if n > s.opts.ConnPerUIDMax {
		return refusedBusy, true
	}
	return admitted, true
}

// leave uncounts a connection that admit counted.
func (s *Server) leave(uid uint32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.unprivConns--
	if s.uidConns[uid]--; s.uidConns[uid] == 0 {
		delete(s.uidConns, uid)
	}
}
