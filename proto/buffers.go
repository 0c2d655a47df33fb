package proto

import (
	"bufio"
	"encoding/binary"
	"sync"
)

// Frame buffers for the server and the client, which read and write frames
// the same way: pooled by size class, and sized for a frame before it is
// read without trusting a size over the limit.

// Frame buffer size classes: most frames are small; 4 KiB writes and reads
// fit the middle class; only large data needs a whole frame.
const (
	BufferSmall  = 8 << 10
	bufferMedium = 128 << 10
	bufferLarge  = FrameSizeMax
)

// Frame buffers come from three pools by size class, so that a connection
// in a steady state allocates nothing per request, and a 4 KiB request does
// not pin a 1 MiB buffer.
var bufferPools = [3]sync.Pool{
	{New: func() any { b := make([]byte, 0, BufferSmall); return &b }},
	{New: func() any { b := make([]byte, 0, bufferMedium); return &b }},
	{New: func() any { b := make([]byte, 0, bufferLarge); return &b }},
}

// GetBuffer returns an empty buffer with room for n bytes (n ≤ bufferLarge).
func GetBuffer(n int) *[]byte {
	var b *[]byte
	switch {
	case n <= BufferSmall:
		b = bufferPools[0].Get().(*[]byte)
	case n <= bufferMedium:
		b = bufferPools[1].Get().(*[]byte)
	default:
		b = bufferPools[2].Get().(*[]byte)
	}
	*b = (*b)[:0]
	return b
}

// PutBuffer returns b to its pool. Only a buffer of exactly a class's
// capacity is kept (one that was grown by append, or made elsewhere, is
// left to the garbage collector), so that a buffer from GetBuffer(n) always
// has capacity BufferCap(n): the server charges its memory budget by it.
func PutBuffer(b *[]byte) {
	if b == nil {
		return
	}
	switch cap(*b) {
	case bufferLarge:
		bufferPools[2].Put(b)
	case bufferMedium:
		bufferPools[1].Put(b)
	case BufferSmall:
		bufferPools[0].Put(b)
	}
}

// BufferCap is the capacity of the buffer GetBuffer(n) returns: its size
// class (n ≤ bufferLarge).
func BufferCap(n int) int {
	switch {
	case n <= BufferSmall:
		return BufferSmall
	case n <= bufferMedium:
		return bufferMedium
	default:
		return bufferLarge
	}
}

// FrameBufferCap is the capacity of the buffer FrameBuffer returns for a
// frame of the given size field: its class when size is within
// frameSizeMax, the small class otherwise (the frame is refused unread).
func FrameBufferCap(size, frameSizeMax uint32) int {
	if size > frameSizeMax {
		return BufferSmall
	}
	return BufferCap(int(size))
}

// FrameBuffer returns a buffer for the next frame on r: its size is peeked
// (4 bytes) and, when it is within frameSizeMax, a buffer of its class is
// taken; otherwise a small one, which ReadFrame will not even use, since it
// refuses the size before reading further. Nothing is allocated by a size
// read from the wire that is over the limit. A failed peek returns a small
// buffer and lets ReadFrame report the error.
func FrameBuffer(r *bufio.Reader, frameSizeMax uint32) *[]byte {
	h, err := r.Peek(4)
	if err != nil {
		return GetBuffer(0)
	}
	size := binary.LittleEndian.Uint32(h)
	if size > frameSizeMax {
		return GetBuffer(0)
	}
	return GetBuffer(int(size))
}

// BufferLargeCap is the largest buffer capacity, BufferCap of a full
// frame: the most one buffer can hold, so the server's memory budget must
// be above it.
func BufferLargeCap() int {
	return bufferLarge
}
