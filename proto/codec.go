package proto

import (
	"encoding/binary"

	"ustore/internal/assert"
)

// The primitive encodings every payload is built from. Little-endian, as
// the on-disk format; no padding, no alignment. Every variable-length field
// but the last is length-prefixed; a payload's last field, when it is file
// data, runs to the end of the payload (the frame's size delimits it).
//
//	u8, u16, u32, u64   little-endian integers
//	i64                 two's complement in a u64
//	bool                u8, 0 or 1 (any other value is malformed)
//	name                u8 length, then 0–255 bytes
//	path                u16 length (≤ PathLenMax), then the bytes
//	timespec            i64 seconds, u32 nanoseconds (< 1e9)
//	data                the rest of the payload

var le = binary.LittleEndian

func appendU8(b []byte, v uint8) []byte   { return append(b, v) }
func appendU16(b []byte, v uint16) []byte { return le.AppendUint16(b, v) }
func appendU32(b []byte, v uint32) []byte { return le.AppendUint32(b, v) }
func appendU64(b []byte, v uint64) []byte { return le.AppendUint64(b, v) }

func appendBool(b []byte, v bool) []byte {
	if v {
		return append(b, 1)
	}
	return append(b, 0)
}

// appendName appends a name; Validate has checked its length.
func appendName(b []byte, s string) []byte {
	assert.That(len(s) <= NameLenMax, "proto: name longer than NameLenMax reached the encoder")
	return append(append(b, uint8(len(s))), s...)
}

// appendPath appends a path; Validate has checked its length.
func appendPath(b []byte, s string) []byte {
	assert.That(len(s) <= PathLenMax, "proto: path longer than PathLenMax reached the encoder")
	return append(appendU16(b, uint16(len(s))), s...)
}

func appendTimespec(b []byte, t Timespec) []byte {
	return appendU32(appendU64(b, uint64(t.Sec)), t.Nsec)
}

// decoder reads a payload front to back. The first failure sticks: later
// reads return zero values and the failure is reported once, by finish, so
// that a payload's decode method reads like its layout. Every length it
// reads is checked against what is left (and its limit) before it slices or
// allocates by it.
type decoder struct {
	b   []byte
	err error
}

// take returns the next n bytes, or nil after recording a truncation.
func (d *decoder) take(n int, what string) []byte {
	if d.err != nil {
		return nil
	}
	if n > len(d.b) {
		d.err = malformed("%s needs %d bytes, %d left in the payload", what, n, len(d.b))
		return nil
	}
	v := d.b[:n:n]
	d.b = d.b[n:]
	return v
}

func (d *decoder) u8(what string) uint8 {
	if b := d.take(1, what); b != nil {
		return b[0]
	}
	return 0
}

func (d *decoder) u16(what string) uint16 {
	if b := d.take(2, what); b != nil {
		return le.Uint16(b)
	}
	return 0
}

func (d *decoder) u32(what string) uint32 {
	if b := d.take(4, what); b != nil {
		return le.Uint32(b)
	}
	return 0
}

func (d *decoder) u64(what string) uint64 {
	if b := d.take(8, what); b != nil {
		return le.Uint64(b)
	}
	return 0
}

func (d *decoder) bool(what string) bool {
	switch v := d.u8(what); v {
	case 0:
		return false
	case 1:
		return true
	default:
		d.fail("%s is %d, not 0 or 1", what, v)
		return false
	}
}

// name reads a u8-length-prefixed name; its length cannot exceed
// NameLenMax by construction.
func (d *decoder) name(what string) string {
	n := int(d.u8(what + " length"))
	return string(d.str(n, what))
}

// path reads a u16-length-prefixed path, refusing one over PathLenMax
// before it copies it.
func (d *decoder) path(what string) string {
	n := int(d.u16(what + " length"))
	if n > PathLenMax {
		d.fail("%s length %d is more than %d", what, n, PathLenMax)
		return ""
	}
	return string(d.str(n, what))
}

// str takes a string's n bytes, saying so when n overruns the payload.
func (d *decoder) str(n int, what string) []byte {
	if d.err == nil && n > len(d.b) {
		d.fail("%s length %d overruns the payload (%d bytes left)", what, n, len(d.b))
	}
	return d.take(n, what)
}

// timespec takes a time's two fields, named what and whatNsec in an error
// (two constants: a name built per call cost an allocation per field of
// every attribute decoded).
func (d *decoder) timespec(what, whatNsec string) Timespec {
	return Timespec{Sec: int64(d.u64(what)), Nsec: d.u32(whatNsec)}
}

// data takes the rest of the payload: file data, which aliases it. Its
// limit is checked by the caller's Validate; nothing is copied.
func (d *decoder) data() []byte {
	if d.err != nil {
		return nil
	}
	v := d.b
	d.b = d.b[len(d.b):]
	if len(v) == 0 {
		return nil // one representation of no data, for round trips
	}
	return v
}

func (d *decoder) fail(format string, args ...any) {
	if d.err == nil {
		d.err = malformed(format, args...)
	}
}

// finish reports the first failure, or trailing bytes after the last field.
func (d *decoder) finish() error {
	if d.err == nil && len(d.b) > 0 {
		d.err = malformed("%d trailing bytes after the payload", len(d.b))
	}
	return d.err
}
