package sysdev

import "errors"

var (
	// ErrSize: Options.Size is negative or not a multiple of
	// dev.SectorSize, a block device is smaller than Options.Size, or the
	// device would hold less than one sector.
	ErrSize = errors.New("sysdev: bad device size")
	// ErrWorkers: Options.Workers is negative or above the limit.
	ErrWorkers = errors.New("sysdev: bad worker count")
	// ErrFileType: the path is neither a regular file nor a block device.
	ErrFileType = errors.New("sysdev: not a regular file or block device")
	// ErrTruncated: a read hit the end of the backing file before the end of
	// the device — the file was truncated behind the device's back. It comes
	// wrapped with an EIO dev.MediumError, so it also matches dev.ErrIO.
	ErrTruncated = errors.New("sysdev: backing file shorter than the device")
)
