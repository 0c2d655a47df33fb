package client

import (
	"bufio"
	"encoding/binary"
	"sync"

	"ustore/proto"
)

// Frame buffer size classes: most frames are small; 4 KiB writes and reads
// fit the middle class; only large data needs a whole frame.
const (
	bufSmall  = 8 << 10
	bufMedium = 128 << 10
	bufLarge  = proto.FrameSizeMax
)

// Frame buffers come from three pools by size class, so that a connection
// in a steady state allocates nothing per request, and a 4 KiB request does
// not pin a 1 MiB buffer.
var bufPools = [3]sync.Pool{
	{New: func() any { b := make([]byte, 0, bufSmall); return &b }},
	{New: func() any { b := make([]byte, 0, bufMedium); return &b }},
	{New: func() any { b := make([]byte, 0, bufLarge); return &b }},
}

// getBuf returns an empty buffer with room for n bytes (n ≤ bufLarge).
func getBuf(n int) *[]byte {
	var b *[]byte
	switch {
	case n <= bufSmall:
		b = bufPools[0].Get().(*[]byte)
	case n <= bufMedium:
		b = bufPools[1].Get().(*[]byte)
	default:
		b = bufPools[2].Get().(*[]byte)
	}
	*b = (*b)[:0]
	return b
}

// putBuf returns b to its pool. A buffer that grew past its class (it
// cannot: appends stay within the room asked for) goes to the class of its
// capacity.
func putBuf(b *[]byte) {
	if b == nil {
		return
	}
	switch c := cap(*b); {
	case c >= bufLarge:
		bufPools[2].Put(b)
	case c >= bufMedium:
		bufPools[1].Put(b)
	case c >= bufSmall:
		bufPools[0].Put(b)
	}
}

// frameBuffer returns a buffer for the next frame on r: its size is peeked
// (4 bytes) and, when it is within frameSizeMax, a buffer of its class is
// taken; otherwise a small one, which ReadFrame will not even use, since it
// refuses the size before reading further. Nothing is allocated by a size
// read from the wire that is over the limit. A failed peek returns a small
// buffer and lets ReadFrame report the error.
func frameBuffer(r *bufio.Reader, frameSizeMax uint32) *[]byte {
	h, err := r.Peek(4)
	if err != nil {
		return getBuf(0)
	}
	size := binary.LittleEndian.Uint32(h)
	if size > frameSizeMax {
		return getBuf(0)
	}
	return getBuf(int(size))
}
