package proto

// TraceparentLen is the length of a W3C traceparent of version 00:
// "00-" 32 hex "-" 16 hex "-" 2 hex.
const TraceparentLen = 55

// Traceparent is a W3C Trace Context traceparent (version 00): the trace a
// request belongs to and the client span that sent it, so that the
// server's span ("ustore.<op>") continues that trace. The zero value means
// none: W3C forbids an all-zero trace id or parent id, so no valid
// traceparent is zero.
type Traceparent struct {
	TraceID  [16]byte
	ParentID [8]byte
	Flags    uint8 // trace-flags; bit 0 is "sampled"
}

// IsZero reports whether t is absent.
func (t Traceparent) IsZero() bool { return t == Traceparent{} }

// ParseTraceparent parses the text form "00-<32 hex>-<16 hex>-<2 hex>".
// Hex digits must be lowercase and neither id may be all zeros (W3C); the
// text is then the one encoding of its value, which keeps frames
// canonical.
func ParseTraceparent(s string) (Traceparent, error) {
	return parseTraceparent([]byte(s))
}

func parseTraceparent(b []byte) (Traceparent, error) {
	var t Traceparent
	if len(b) != TraceparentLen {
		return t, malformed("traceparent is %d bytes, not %d", len(b), TraceparentLen)
	}
	if b[0] != '0' || b[1] != '0' {
		return t, malformed("traceparent version %q is not \"00\"", b[:2])
	}
	if b[2] != '-' || b[35] != '-' || b[52] != '-' {
		return t, malformed("traceparent %q is not 00-<32 hex>-<16 hex>-<2 hex>", b)
	}
	ok := hexDecode(t.TraceID[:], b[3:35])
	ok = hexDecode(t.ParentID[:], b[36:52]) && ok
	var f [1]byte
	ok = hexDecode(f[:], b[53:55]) && ok
	if !ok {
		return Traceparent{}, malformed("traceparent %q has a character that is not a lowercase hex digit", b)
	}
	t.Flags = f[0]
	if t.TraceID == [16]byte{} || t.ParentID == [8]byte{} {
		return Traceparent{}, malformed("traceparent %q has an all-zero id", b)
	}
	return t, nil
}

// String returns the text form, or "" for the zero Traceparent.
func (t Traceparent) String() string {
	if t.IsZero() {
		return ""
	}
	return string(t.appendText(make([]byte, 0, TraceparentLen)))
}

// Valid reports whether t may be sent: zero (absent) or both ids non-zero.
func (t Traceparent) Valid() bool {
	return t.IsZero() || (t.TraceID != [16]byte{} && t.ParentID != [8]byte{})
}

func (t Traceparent) appendText(b []byte) []byte {
	b = append(b, '0', '0', '-')
	b = hexAppend(b, t.TraceID[:])
	b = append(b, '-')
	b = hexAppend(b, t.ParentID[:])
	b = append(b, '-')
	return append(b, hexDigits[t.Flags>>4], hexDigits[t.Flags&15])
}

const hexDigits = "0123456789abcdef"

func hexAppend(dst, src []byte) []byte {
	for _, c := range src {
		dst = append(dst, hexDigits[c>>4], hexDigits[c&15])
	}
	return dst
}

// hexDecode decodes lowercase hex src into dst (len(src) == 2*len(dst)).
func hexDecode(dst, src []byte) bool {
	for i := range dst {
		hi, ok1 := hexVal(src[2*i])
		lo, ok2 := hexVal(src[2*i+1])
		if !ok1 || !ok2 {
			return false
		}
		dst[i] = hi<<4 | lo
	}
	return true
}

func hexVal(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	}
	return 0, false
}
