package proto

import (
	"errors"
	"fmt"
	"io"
	"syscall"
)

// The handshake. A connection starts with one hello from the client and one
// reply from the server, both of fixed size, before any frame. Their
// layouts never change, whatever the version: they are how two versions
// find out about each other.
//
// Hello, client → server (8 bytes):
//
//	off  size  field
//	  0     4  magic "USTP"
//	  4     2  lowest version the client speaks (u16, ≥ 1)
//	  6     2  highest version the client speaks (u16, ≥ lowest)
//
// HelloReply, server → client (16 bytes):
//
//	off  size  field
//	  0     4  magic "USTP"
//	  4     2  status: OK, or StatusVersion / StatusBadMessage / StatusAccess /
//	            StatusBusy and the server closes
//	  6     2  version chosen: the highest both speak (0 unless OK)
//	  8     4  frame size max, Limits.FrameSizeMax (0 unless OK)
//	 12     4  in-flight max, Limits.InflightMax (0 unless OK)

// The versions this package speaks. Version 1 is the first.
const (
	Version1   = 1
	VersionMin = Version1
	VersionMax = Version1
)

// Handshake sizes.
const (
	HelloSize      = 8
	HelloReplySize = 16
)

// magic opens both handshake messages: a peer that is not a ustore client
// or server is told apart at the first four bytes.
const magic = "USTP"

// Hello is the client's opening: the range of versions it speaks.
type Hello struct {
	VersionMin, VersionMax uint16
}

// ClientHello is the hello of a client built on this package.
func ClientHello() Hello { return Hello{VersionMin: VersionMin, VersionMax: VersionMax} }

// HelloReply is the server's answer: the version chosen and the server's
// limits, or a failed status (and the server closes).
type HelloReply struct {
	Status  Status
	Version uint16
	Limits  Limits
}

// AppendHello appends h to dst. h must be a valid range (as ReadHello
// checks).
func AppendHello(dst []byte, h Hello) []byte {
	dst = append(dst, magic...)
	return appendU16(appendU16(dst, h.VersionMin), h.VersionMax)
}

// ReadHello reads a client's hello. io.EOF means the client closed before
// sending anything; a short, unknown (bad magic) or empty-range hello is
// ErrMalformed.
func ReadHello(r io.Reader) (Hello, error) {
	var b [HelloSize]byte
	if err := readFixed(r, b[:]); err != nil {
		return Hello{}, err
	}
	return DecodeHello(b[:])
}

// DecodeHello decodes a hello of exactly HelloSize bytes.
func DecodeHello(b []byte) (Hello, error) {
	if len(b) != HelloSize {
		return Hello{}, malformed("hello of %d bytes, not %d", len(b), HelloSize)
	}
	if string(b[:4]) != magic {
		return Hello{}, malformed("hello magic %q is not %q", b[:4], magic)
	}
	h := Hello{VersionMin: le.Uint16(b[4:6]), VersionMax: le.Uint16(b[6:8])}
	if h.VersionMin == 0 || h.VersionMin > h.VersionMax {
		return Hello{}, malformed("hello version range [%d, %d] is empty or starts at 0", h.VersionMin, h.VersionMax)
	}
	return h, nil
}

// Negotiate returns the highest version that both h and this package
// speak, or ErrVersion (the server replies StatusVersion and closes).
func Negotiate(h Hello) (uint16, error) {
	v := min(h.VersionMax, VersionMax)
	if v < h.VersionMin || v < VersionMin {
		return 0, fmt.Errorf("%w: the client speaks %d–%d, this server %d–%d",
			ErrVersion, h.VersionMin, h.VersionMax, VersionMin, VersionMax)
	}
	return v, nil
}

// AppendHelloReply appends r to dst. A reply with status OK carries a
// version and valid limits; a failed one carries only its status. It fails
// (EINVAL, dst unchanged) on anything else.
func AppendHelloReply(dst []byte, r HelloReply) ([]byte, error) {
	if err := r.validate(); err != nil {
		return dst, err
	}
	dst = append(dst, magic...)
	dst = appendU16(appendU16(dst, uint16(r.Status)), r.Version)
	return appendU32(appendU32(dst, r.Limits.FrameSizeMax), r.Limits.InflightMax), nil
}

func (r HelloReply) validate() error {
	switch {
	case !r.Status.Known():
		return invalid(syscall.EINVAL, "hello reply status %d is unknown", uint16(r.Status))
	case r.Status != StatusOK && (r.Version != 0 || r.Limits != Limits{}):
		return invalid(syscall.EINVAL, "failed hello reply (%v) with a version or limits", r.Status)
	case r.Status == StatusOK && r.Version == 0:
		return invalid(syscall.EINVAL, "hello reply with status OK and version 0")
	case r.Status == StatusOK:
		return r.Limits.Validate()
	}
	return nil
}

// ReadHelloReply reads the server's answer to sent. A failed status is
// returned as a *StatusError (errors.Is(err, syscall.EPROTONOSUPPORT) for
// no common version) with the reply; a version outside sent's range or
// limits out of bounds are ErrMalformed.
func ReadHelloReply(r io.Reader, sent Hello) (HelloReply, error) {
	var b [HelloReplySize]byte
	if err := readFixed(r, b[:]); err != nil {
		return HelloReply{}, err
	}
	rep, err := DecodeHelloReply(b[:])
	if err != nil {
		return HelloReply{}, err
	}
	if rep.Status != StatusOK {
		return rep, &StatusError{Status: rep.Status, Message: "the server refused the handshake"}
	}
	if rep.Version < sent.VersionMin || rep.Version > sent.VersionMax {
		return HelloReply{}, malformed("server chose version %d outside [%d, %d]", rep.Version, sent.VersionMin, sent.VersionMax)
	}
	return rep, nil
}

// DecodeHelloReply decodes a hello reply of exactly HelloReplySize bytes.
func DecodeHelloReply(b []byte) (HelloReply, error) {
	if len(b) != HelloReplySize {
		return HelloReply{}, malformed("hello reply of %d bytes, not %d", len(b), HelloReplySize)
	}
	if string(b[:4]) != magic {
		return HelloReply{}, malformed("hello reply magic %q is not %q", b[:4], magic)
	}
	r := HelloReply{
		Status:  Status(le.Uint16(b[4:6])),
		Version: le.Uint16(b[6:8]),
		Limits:  Limits{FrameSizeMax: le.Uint32(b[8:12]), InflightMax: le.Uint32(b[12:16])},
	}
	if err := r.validate(); err != nil {
		return HelloReply{}, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	return r, nil
}

// readFixed reads exactly len(b) bytes: io.EOF when r ends before the
// first, ErrMalformed when it ends after it.
func readFixed(r io.Reader, b []byte) error {
	n, err := io.ReadFull(r, b)
	switch {
	case err == nil:
		return nil
	case n == 0 && errors.Is(err, io.EOF):
		return io.EOF
	default:
		return readErr(err, n, len(b))
	}
}
