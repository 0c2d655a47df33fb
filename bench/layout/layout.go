// Package layout lays out the device file a benchmark runs the store on
// (`ustore bench store` and `ustore bench service`): written in full once,
// so that neither the store's writes nor its flushes pay for allocating
// the file's blocks, and later runs on the same file find it ready.
package layout

import (
	"fmt"
	"math/rand/v2"
	"os"
	"syscall"

	"golang.org/x/sys/unix"

	"ustore/dev"
)

// chunkBytes is the size of each write that lays a file out.
const chunkBytes = 1 << 20

// File writes the regular file at path in full when it is missing, short
// or sparse — chunkBytes O_DIRECT writes of a pseudo-random pattern, then
// fsync; not fallocate, whose unwritten extents ext4 converts (a metadata
// write) on the first write to each — and returns its size, in whole
// sectors. size is rounded down to whole chunks. A block device is left
// alone (0). phase is told when the writing starts.
func File(path string, size int64, phase func(string, ...any)) (int64, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return 0, err
	}
	if st.Mode&unix.S_IFMT == unix.S_IFBLK {
		return 0, nil
	}
	size = size / chunkBytes * chunkBytes
	if st.Size >= size && st.Blocks*512 >= size {
		return st.Size / dev.SectorSize * dev.SectorSize, nil
	}
	phase("laying out %s: %d bytes written in full (O_DIRECT, 1 MiB writes)", path, size)
	df, err := os.OpenFile(path, os.O_RDWR|syscall.O_DIRECT, 0)
	if err != nil {
		return 0, err
	}
	defer df.Close()
	buf := pattern(chunkBytes)
	for off := int64(0); off < size; off += int64(len(buf)) {
		if _, err := df.WriteAt(buf, off); err != nil {
			return 0, err
		}
	}
	if err := df.Sync(); err != nil {
		return 0, err
	}
	if err := unix.Fstat(int(df.Fd()), &st); err != nil {
		return 0, err
	}
	if st.Blocks*512 < size {
		return 0, fmt.Errorf("still sparse after writing it: %d of %d bytes allocated", st.Blocks*512, size)
	}
	return st.Size / dev.SectorSize * dev.SectorSize, nil
}

// pattern is n bytes (a multiple of 8) of the benchmarks' pseudo-random
// data with seed 3, in a buffer aligned for O_DIRECT: the bytes both
// benchmarks have always laid their files out with.
func pattern(n int) []byte {
	buf := dev.AlignedBuffer(n)
	rng := rand.New(rand.NewPCG(3, 0x5eed))
	for i := 0; i+8 <= n; i += 8 {
		v := rng.Uint64()
		for j := range 8 {
			buf[i+j] = byte(v >> (8 * j))
		}
	}
	return buf
}
