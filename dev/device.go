package dev

import "fmt"

// SectorSize is the unit of every offset and length handed to a Device. 4096
// rather than 512: it is the logical block size of every device ustore targets
// and the page size, so O_DIRECT and registered buffers both work with it.
const SectorSize = 4096

// TornSize is the granularity at which a power cut may tear a write: the
// smallest unit a disk writes atomically.
const TornSize = 512

// IO is one read or one write of a batch.
type IO struct {
	Off int64  // byte offset on the device; a multiple of SectorSize
	Buf []byte // 4096-aligned memory whose length is a multiple of SectorSize
	Err error  // set by the device when the batch returns
}

// Device is a fixed-size array of sectors. See the package documentation for
// the contract every implementation keeps.
type Device interface {
	// Size returns the device's size in bytes, a multiple of SectorSize.
	Size() int64
	// Read fills each IO's buffer from the device.
	Read(ios []IO) error
	// Write writes each IO's buffer to the device's volatile cache.
	Write(ios []IO) error
	// Flush makes every write completed before the call durable.
	Flush() error
	// WriteDurable writes each stage in parallel and flushes after it; stage
	// i+1 starts only after stage i is durable.
	WriteDurable(stages ...[]IO) error
	// Buffers returns the device's pool of aligned buffers. Memory from it may
	// take a faster path (io_uring registered buffers).
	Buffers() *BufferPool
	// Backend names the implementation and mode ("io_uring (O_DIRECT)", ...).
	Backend() string
	// Close waits for nothing: callers must have no call in flight.
	Close() error
}

// CheckIO validates a batch against the alignment rules and the device size.
// On failure every IO of the batch carries the error.
func CheckIO(ios []IO, size int64) error {
	err := checkIO(ios, size)
	if err != nil {
		for i := range ios {
			ios[i].Err = err
		}
	}
	return err
}

func checkIO(ios []IO, size int64) error {
	for i := range ios {
		io := &ios[i]
		n := int64(len(io.Buf))
		if io.Off%SectorSize != 0 || n%SectorSize != 0 || n == 0 {
			return fmt.Errorf("%w: io %d: offset %d length %d", ErrAlignment, i, io.Off, n)
		}
		if !IsAligned(io.Buf) {
			return fmt.Errorf("%w: io %d: buffer address not 4096-aligned", ErrAlignment, i)
		}
		if io.Off < 0 || io.Off > size-n { // not Off+n > size: that can overflow
			return fmt.Errorf("%w: io %d: [%d, %d) outside device of %d bytes", ErrOutOfRange, i, io.Off, io.Off+n, size)
		}
	}
	return nil
}

// FirstError returns the first IO's error in batch order, or nil.
func FirstError(ios []IO) error {
	for i := range ios {
		if ios[i].Err != nil {
			return ios[i].Err
		}
	}
	return nil
}
