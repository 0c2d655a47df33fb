package proto

import (
	"fmt"
	"unicode/utf8"

	"ustore/internal/assert"
)

// Reply is one op's reply payload, sent with status OK: *Attr, *Empty,
// *ReadDirReply, *StatFSReply, *WriteReply, *ReadReply or *GetReply (ops.go
// says which op has which). The set is closed.
type Reply interface {
	// Validate checks what the wire cannot carry (more than
	// ReadDirEntriesMax entries, data over IOSizeMax, nanoseconds ≥ 1e9).
	Validate() error

	kind() replyKind
	appendPayload(dst []byte) []byte
	decode(d *decoder)
}

// AppendResponse appends a response frame for request id of op op to dst:
// with status OK and reply (of op's reply type) as its payload, or with a
// failed status, message (cut to MessageLenMax at a character boundary)
// and no payload (reply nil). id 0 with op 0 is a connection-level error:
// the server sends it before closing when it cannot name a request. It
// fails, dst unchanged, when reply does not validate.
func AppendResponse(dst []byte, id uint64, op Op, s Status, message string, reply Reply) ([]byte, error) {
	assert.That(s.Known(), "proto: AppendResponse with an unknown status")
	if s != StatusOK {
		assert.That(reply == nil, "proto: a failed response with a reply")
		assert.That(id != 0 || op == 0, "proto: a connection-level response (id 0) with an op")
		dst, start := beginResponse(dst, id, op, s, cutMessage(message))
		return endFrame(dst, start)
	}
	assert.That(id != 0, "proto: a response with status OK for request id 0")
	assert.That(message == "", "proto: a response with status OK and a message")
	assert.That(op.Known() && reply != nil && reply.kind() == ops[op].reply,
		"proto: AppendResponse with a reply of the wrong type for its op")
	if err := reply.Validate(); err != nil {
		return dst, err
	}
	dst, start := beginResponse(dst, id, op, StatusOK, "")
	return endFrame(reply.appendPayload(dst), start)
}

// cutMessage cuts m to at most MessageLenMax bytes without splitting a
// UTF-8 sequence: a message is for people, and a cut one is still read.
func cutMessage(m string) string {
	if len(m) <= MessageLenMax {
		return m
	}
	n := MessageLenMax
	for n > 0 && !utf8.RuneStart(m[n]) {
		n--
	}
	return m[:n]
}

// DecodeReply decodes the payload of a response frame with status OK to a
// request of op op. Byte-slice fields (ReadReply.Data, GetReply.Data)
// alias payload. An unknown op is ErrUnknownOp; anything else wrong is
// ErrMalformed.
func DecodeReply(op Op, payload []byte) (Reply, error) {
	r := newReply(op)
	if r == nil {
		return nil, fmt.Errorf("%w %d", ErrUnknownOp, uint8(op))
	}
	d := decoder{b: payload}
	r.decode(&d)
	if err := d.finish(); err != nil {
		return nil, fmt.Errorf("%v reply: %w", op, err)
	}
	if err := r.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %v reply: %v", ErrMalformed, op, err)
	}
	return r, nil
}
