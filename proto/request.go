package proto

import (
	"errors"
	"fmt"
	"syscall"
)

// Request is one op's request payload: *Lookup, *Create, … one type per op
// (ops.go). The set is closed: only this package's types implement it.
type Request interface {
	// Op is the request's op code.
	Op() Op
	// Validate checks what the wire cannot carry or the protocol forbids
	// (a name over NameLenMax: ENAMETOOLONG; data over IOSizeMax:
	// EMSGSIZE; a bad flag or count: EINVAL). A client calls it, through
	// AppendRequest, before sending; a decoder calls it after decoding.
	Validate() error

	appendPayload(dst []byte) []byte
	decode(d *decoder)
}

// AppendRequest appends a request frame for req, with request id id (not
// 0) and the traceparent t (zero for none), to dst. It fails, dst
// unchanged, when req does not validate. It allocates nothing when dst has
// room. The caller still keeps data within the negotiated
// Limits.IOSizeMax, which may be less than IOSizeMax.
func AppendRequest(dst []byte, id uint64, t Traceparent, req Request) ([]byte, error) {
	if id == 0 {
		return dst, invalid(syscall.EINVAL, "request id 0 is reserved")
	}
	if !t.Valid() {
		return dst, invalid(syscall.EINVAL, "traceparent with an all-zero id")
	}
	if err := req.Validate(); err != nil {
		return dst, err
	}
	dst, start := beginRequest(dst, id, req.Op(), t)
	return endFrame(req.appendPayload(dst), start)
}

// DecodeRequest decodes the payload of a request frame of op op. An op this
// version does not know is ErrUnknownOp (answer StatusNoSys and go on);
// data or a read length over IOSizeMax is ErrOverLimit, which also wraps
// EINVAL (answer StatusInvalid and go on); anything else wrong is
// ErrMalformed (answer StatusBadMessage and close).
// Byte-slice fields (Write.Data, Put.Data) alias payload.
func DecodeRequest(op Op, payload []byte) (Request, error) {
	req := newRequest(op)
	if req == nil {
		return nil, fmt.Errorf("%w %d", ErrUnknownOp, uint8(op))
	}
	d := decoder{b: payload}
	req.decode(&d)
	if err := d.finish(); err != nil {
		return nil, fmt.Errorf("%v request: %w", op, err)
	}
	if err := req.Validate(); err != nil {
		if errors.Is(err, syscall.EMSGSIZE) {
			// Only checkData says EMSGSIZE: a number too large in a
			// payload that decoded, not bytes out of step.
			return nil, fmt.Errorf("%w: %v request: %v: %w", ErrOverLimit, op, err, syscall.EINVAL)
		}
		return nil, fmt.Errorf("%w: %v request: %v", ErrMalformed, op, err)
	}
	return req, nil
}

// checkName is Validate's check of a name field.
func checkName(op Op, field, name string) error {
	if len(name) > NameLenMax {
		return invalid(syscall.ENAMETOOLONG, "%v: %s is %d bytes, more than %d", op, field, len(name), NameLenMax)
	}
	return nil
}

// checkPath is Validate's check of a path field.
func checkPath(op Op, path string) error {
	if len(path) > PathLenMax {
		return invalid(syscall.ENAMETOOLONG, "%v: path is %d bytes, more than %d", op, len(path), PathLenMax)
	}
	return nil
}

// checkData is Validate's check of a data field or a read length.
func checkData(op Op, n int) error {
	if n > IOSizeMax {
		return invalid(syscall.EMSGSIZE, "%v: %d bytes of data, more than %d: send it in chunks", op, n, IOSizeMax)
	}
	return nil
}

// checkPerm is Validate's check of a permission field: permission bits only
// (the file type comes from the op).
func checkPerm(op Op, perm uint32) error {
	if perm&^permMask != 0 {
		return invalid(syscall.EINVAL, "%v: mode %#o has bits outside %#o", op, perm, permMask)
	}
	return nil
}

// permMask is the permission bits, st_mode's 07777.
const permMask = 0o7777
