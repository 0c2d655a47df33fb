package store

import (
	"fmt"

	"ustore/engine"
	"ustore/journal"
)

// Checks of one item's fields against what the store can ever write, and
// against the device: cheap, and what a damaged or forged item that still
// has a valid leaf checksum looks like (an inode size of 2^63−1 makes every
// offset computation overflow; an extent past the device's end makes a
// read fail far from its cause). Check runs them on every item.

// checkInodeFields returns what is wrong with inode ino's item.
func (s *Store) checkInodeFields(ino Ino, it engine.InodeItem, committed journal.Transid) []error {
	var errs []error
	if t := it.Mode & ModeType; t != ModeDir && t != ModeFile && t != ModeLink {
		errs = append(errs, fmt.Errorf("inode %d: mode %#o is no file type the store has", ino, it.Mode))
	}
	if it.Mode&ModeType != ModeDir && it.Size > MaxFileSize {
		errs = append(errs, fmt.Errorf("inode %d: size %d past the largest file size %d", ino, it.Size, uint64(MaxFileSize)))
	}
	if it.Nbytes > MaxFileSize {
		errs = append(errs, fmt.Errorf("inode %d: nbytes %d past the largest file size %d", ino, it.Nbytes, uint64(MaxFileSize)))
	}
	if it.Generation > it.Transid || it.Transid > committed {
		errs = append(errs, fmt.Errorf("inode %d: created in transaction %d, changed in %d, newest commit %d", ino, it.Generation, it.Transid, committed))
	}
	return errs
}

// checkExtentFields returns what is wrong with the extent item at k.
func (s *Store) checkExtentFields(k engine.Key, x engine.FileExtent, committed journal.Transid) []error {
	var errs []error
	if k.Offset >= MaxFileSize || x.NumBytes > MaxFileSize-k.Offset {
		errs = append(errs, fmt.Errorf("inode %d: extent [%d, +%d) past the largest file size %d", k.Ino(), k.Offset, x.NumBytes, uint64(MaxFileSize)))
	}
	if x.Type == engine.ExtentRegular && !extentOnDevice(x, uint64(s.dev.Size())) {
		errs = append(errs, fmt.Errorf("inode %d: extent at %d: device range [%d, +%d) outside the device of %d bytes",
			k.Ino(), k.Offset, x.DiskBytenr, x.NumBytes, s.dev.Size()))
	}
	if x.Generation > committed {
		errs = append(errs, fmt.Errorf("inode %d: extent at %d written in transaction %d, newest commit %d", k.Ino(), k.Offset, x.Generation, committed))
	}
	return errs
}

// extentOnDevice reports whether regular extent x is whole blocks inside
// the device.
func extentOnDevice(x engine.FileExtent, devSize uint64) bool {
	disk := uint64(x.DiskBytenr)
	return x.NumBytes > 0 && x.NumBytes%blockSize == 0 && disk%blockSize == 0 &&
		disk < devSize && x.NumBytes <= devSize-disk
}
