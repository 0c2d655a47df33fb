package proto

import (
	"bufio"
	"errors"
	"io"
	"syscall"

	"ustore/internal/assert"
)

// Frames. After the handshake both directions carry only frames: requests
// from the client, responses from the server. A frame starts with its own
// size, so a reader knows how much to read before it reads it, and refuses
// a size over the negotiated limit before it allocates anything.
//
// Request frame:
//
//	 off  size  field
//	   0     4  size: the whole frame in bytes, this field included (u32)
//	   4     1  kind: 'Q' (0x51)
//	   5     1  op
//	   6     2  flags: bit 0 FlagTraceparent; the other bits must be 0
//	   8     8  request id (u64, not 0)
//	  16    55  traceparent, text "00-<32 hex>-<16 hex>-<2 hex>" (only with FlagTraceparent;
//	            one that does not parse is ignored)
//	16|71    …  payload: the op's request (size - 16 or - 71 bytes)
//
// Response frame:
//
//	 off  size  field
//	   0     4  size: the whole frame in bytes, this field included (u32)
//	   4     1  kind: 'R' (0x52)
//	   5     1  op: the request's op (0 with request id 0)
//	   6     2  status
//	   8     8  request id: the request's, or 0 for the connection
//	  16     2  message length m (≤ MessageLenMax; 0 when status is OK)
//	  18     m  message (text for people; only when status is not OK)
//	18+m     …  payload: the op's reply (status OK only; empty otherwise)

// Kind tells a request frame from a response frame. It is a printable byte
// so that a desynchronised stream or a stray client shows up at once.
type Kind uint8

// The frame kinds.
const (
	KindRequest  Kind = 'Q'
	KindResponse Kind = 'R'
)

// Flags are a request frame's flags.
type Flags uint16

// FlagTraceparent says a traceparent follows the header.
const FlagTraceparent Flags = 1 << 0

const flagsKnown = FlagTraceparent

// Header sizes: the fixed part of each kind of frame.
const (
	requestHeaderSize  = 16
	responseHeaderSize = 18
	headerPeekSize     = 16 // what ReadFrame reads before it decides to allocate
)

// Frame is one decoded frame. Which fields mean something depends on Kind;
// the others are zero.
type Frame struct {
	Kind Kind
	Op   Op
	ID   uint64 // request id; 0 only in a connection-level response

	Trace Traceparent // request: the client's trace context, zero if none

	Status  Status // response
	Message string // response with a status other than OK

	// Payload is the op's request or reply, not yet decoded
	// (DecodeRequest, DecodeReply). It aliases the frame's buffer.
	Payload []byte
}

// ReadFrame reads one frame of kind want (KindRequest in a server,
// KindResponse in a client, 0 for either) from r, refusing it before
// anything is allocated when its size is over frameSizeMax (the limit the
// handshake agreed), under its kind's header size, or its kind is not
// want. The frame is read into buf when it fits (cap), into a new slice of
// exactly the frame's size otherwise; Payload aliases that memory.
//
// io.EOF means r ended cleanly before a frame; any other failure to read a
// whole frame is ErrMalformed wrapping io.ErrUnexpectedEOF, or r's error.
func ReadFrame(r *bufio.Reader, want Kind, frameSizeMax uint32, buf []byte) (Frame, error) {
	assert.That(frameSizeMax <= FrameSizeMax, "proto: ReadFrame's limit is over the protocol's FrameSizeMax")
	h, err := r.Peek(headerPeekSize)
	if err != nil {
		if len(h) == 0 && errors.Is(err, io.EOF) {
			return Frame{}, io.EOF
		}
		return Frame{}, readErr(err, len(h), headerPeekSize)
	}
	size, err := checkHeader(h, want, frameSizeMax)
	if err != nil {
		return Frame{}, err
	}
	// The size is within the limit: now, and only now, memory for it.
	if uint32(cap(buf)) >= size {
		buf = buf[:size]
	} else {
		buf = make([]byte, size)
	}
	if n, err := io.ReadFull(r, buf); err != nil {
		return Frame{}, readErr(err, n, int(size))
	}
	return DecodeFrame(buf)
}

// readErr turns a short read into ErrMalformed (the peer stopped mid-frame)
// and passes other errors through.
func readErr(err error, got, want int) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return truncated(got, want)
	}
	return err
}

// checkHeader checks a frame's first 16 bytes: its kind and its size
// against the kind's header and against frameSizeMax. It returns the size.
func checkHeader(h []byte, want Kind, frameSizeMax uint32) (uint32, error) {
	size := le.Uint32(h[0:4])
	kind := Kind(h[4])
	var min uint32
	switch kind {
	case KindRequest:
		min = requestHeaderSize
	case KindResponse:
		min = responseHeaderSize
	default:
		return 0, malformed("frame kind 0x%02x is neither request nor response", h[4])
	}
	if want != 0 && kind != want {
		return 0, malformed("frame kind %q where %q was expected", kind, want)
	}
	if size > frameSizeMax {
		return 0, malformed("frame size %d is more than the limit %d", size, frameSizeMax)
	}
	if size < min {
		return 0, malformed("frame size %d is less than its header (%d)", size, min)
	}
	return size, nil
}

// DecodeFrame decodes b, which must be exactly one frame of either kind, no
// longer than FrameSizeMax. Payload and nothing else aliases b.
func DecodeFrame(b []byte) (Frame, error) {
	if len(b) < headerPeekSize {
		return Frame{}, truncated(len(b), headerPeekSize)
	}
	size, err := checkHeader(b, 0, FrameSizeMax)
	if err != nil {
		return Frame{}, err
	}
	if int(size) != len(b) {
		return Frame{}, malformed("frame size field %d, but the frame is %d bytes", size, len(b))
	}
	f := Frame{Kind: Kind(b[4]), Op: Op(b[5]), ID: le.Uint64(b[8:16])}
	aux := le.Uint16(b[6:8])
	if f.Kind == KindRequest {
		return decodeRequestFrame(f, Flags(aux), b)
	}
	return decodeResponseFrame(f, Status(aux), b)
}

func decodeRequestFrame(f Frame, flags Flags, b []byte) (Frame, error) {
	if f.ID == 0 {
		return Frame{}, malformed("request id 0 is reserved")
	}
	if flags&^flagsKnown != 0 {
		return Frame{}, malformed("unknown request flags 0x%04x", uint16(flags&^flagsKnown))
	}
	rest := b[requestHeaderSize:]
	if flags&FlagTraceparent != 0 {
		if len(rest) < TraceparentLen {
			return Frame{}, malformed("traceparent overruns the frame (%d bytes left)", len(rest))
		}
		// A traceparent that does not parse (uppercase hex, another
		// version, an all-zero id) is ignored, as W3C Trace Context asks
		// of a vendor that cannot parse it: the request starts a new
		// trace and is served. Its 55 bytes still delimit the payload.
		if t, err := parseTraceparent(rest[:TraceparentLen]); err == nil {
			f.Trace = t
		}
		rest = rest[TraceparentLen:]
	}
	f.Payload = rest
	return f, nil
}

func decodeResponseFrame(f Frame, status Status, b []byte) (Frame, error) {
	if !status.Known() {
		return Frame{}, malformed("unknown status %d", uint16(status))
	}
	f.Status = status
	if f.ID == 0 && (status == StatusOK || f.Op != 0) {
		return Frame{}, malformed("a connection-level response (id 0) with status %v and op %d", status, uint8(f.Op))
	}
	m := int(le.Uint16(b[16:18]))
	rest := b[responseHeaderSize:]
	switch {
	case m > MessageLenMax:
		return Frame{}, malformed("message length %d is more than %d", m, MessageLenMax)
	case m > len(rest):
		return Frame{}, malformed("message length %d overruns the frame (%d bytes left)", m, len(rest))
	case m > 0 && status == StatusOK:
		return Frame{}, malformed("a message with status OK")
	case status != StatusOK && len(rest) > m:
		return Frame{}, malformed("%d payload bytes with status %v", len(rest)-m, status)
	}
	if m > 0 {
		f.Message = string(rest[:m])
	}
	f.Payload = rest[m:]
	return f, nil
}

// AppendFrame appends f's encoding to dst. It refuses (with an error, dst
// unchanged) what DecodeFrame would refuse, so that a frame it writes is
// one its peer reads back exactly: AppendFrame(DecodeFrame(b)) == b.
func AppendFrame(dst []byte, f *Frame) ([]byte, error) {
	var start int
	switch f.Kind {
	case KindRequest:
		if f.ID == 0 {
			return dst, invalid(syscall.EINVAL, "request id 0 is reserved")
		}
		if f.Status != 0 || f.Message != "" {
			return dst, invalid(syscall.EINVAL, "a request frame with a status or message")
		}
		if !f.Trace.Valid() {
			return dst, invalid(syscall.EINVAL, "traceparent with an all-zero id")
		}
		dst, start = beginRequest(dst, f.ID, f.Op, f.Trace)
	case KindResponse:
		switch {
		case !f.Status.Known():
			return dst, invalid(syscall.EINVAL, "unknown status %d", uint16(f.Status))
		case !f.Trace.IsZero():
			return dst, invalid(syscall.EINVAL, "a response frame with a traceparent")
		case f.ID == 0 && (f.Status == StatusOK || f.Op != 0):
			return dst, invalid(syscall.EINVAL, "a connection-level response (id 0) with status OK or an op")
		case len(f.Message) > MessageLenMax:
			return dst, invalid(syscall.EMSGSIZE, "message of %d bytes, more than %d", len(f.Message), MessageLenMax)
		case f.Status == StatusOK && f.Message != "":
			return dst, invalid(syscall.EINVAL, "a message with status OK")
		case f.Status != StatusOK && len(f.Payload) > 0:
			return dst, invalid(syscall.EINVAL, "a payload with status %v", f.Status)
		}
		dst, start = beginResponse(dst, f.ID, f.Op, f.Status, f.Message)
	default:
		return dst, invalid(syscall.EINVAL, "frame kind 0x%02x", uint8(f.Kind))
	}
	return endFrame(append(dst, f.Payload...), start)
}

// beginRequest appends a request frame's header (its size still 0) and
// traceparent, and returns where the frame starts, for endFrame.
func beginRequest(dst []byte, id uint64, op Op, t Traceparent) ([]byte, int) {
	start := len(dst)
	var flags Flags
	if !t.IsZero() {
		flags |= FlagTraceparent
	}
	dst = appendU32(dst, 0)
	dst = append(dst, byte(KindRequest), byte(op))
	dst = appendU16(dst, uint16(flags))
	dst = appendU64(dst, id)
	if !t.IsZero() {
		dst = t.appendText(dst)
	}
	return dst, start
}

// beginResponse appends a response frame's header (its size still 0) and
// message, and returns where the frame starts, for endFrame.
func beginResponse(dst []byte, id uint64, op Op, s Status, msg string) ([]byte, int) {
	assert.That(len(msg) <= MessageLenMax, "proto: message longer than MessageLenMax reached the encoder")
	start := len(dst)
	dst = appendU32(dst, 0)
	dst = append(dst, byte(KindResponse), byte(op))
	dst = appendU16(dst, uint16(s))
	dst = appendU64(dst, id)
	dst = appendU16(dst, uint16(len(msg)))
	return append(dst, msg...), start
}

// endFrame writes the size of the frame that starts at start and ends at
// the end of dst, refusing a frame over FrameSizeMax (dst cut back).
func endFrame(dst []byte, start int) ([]byte, error) {
	size := len(dst) - start
	if size > FrameSizeMax {
		return dst[:start], invalid(syscall.EMSGSIZE, "frame of %d bytes, more than %d", size, FrameSizeMax)
	}
	le.PutUint32(dst[start:], uint32(size))
	return dst, nil
}
