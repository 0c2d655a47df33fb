package readbench

import (
	"encoding/binary"
	"fmt"
)

// blockSize is the unit every block is stamped in (the store's block).
const blockSize = 4096

// overwriteMark is set in the stamp of a block a zipf writer overwrote:
// the offset with this bit is still the block's own.
const overwriteMark = 1 << 63

// stamp writes each block's file offset (base + its position in buf) into
// its first 8 bytes; the rest of buf is left as it is.
func stamp(buf []byte, base uint64, mark uint64) {
	for i := 0; i+8 <= len(buf); i += blockSize {
		binary.LittleEndian.PutUint64(buf[i:], (base+uint64(i))|mark)
	}
}

// checkBlock checks the blocks of buf, read at file offset base (block
// aligned): each holds its offset, with or without the overwrite mark.
func checkBlock(buf []byte, base uint64) error {
	for i := 0; i+8 <= len(buf); i += blockSize {
		got := binary.LittleEndian.Uint64(buf[i:])
		if want := base + uint64(i); got&^overwriteMark != want {
			return fmt.Errorf("readbench: block at offset %d holds stamp %d: wrong data", want, got&^overwriteMark)
		}
	}
	return nil
}
