package main

// `ustore serve --read-only`: the degraded mode for a damaged device. The
// data file is never created or formatted, the store is opened read-only
// (store/read_only.go: nothing is written, every change is EROFS), and a
// pending fsync log is refused with the way out (fsck or a read-write
// serve replays it), since replaying it writes.

import (
	"fmt"
	"log/slog"
	"os"

	"ustore/dev"
	"ustore/dev/devopen"
)

// openDeviceReadOnly opens an existing device as it is, O_RDONLY: no size
// change, no format, and the kernel refuses any write.
func openDeviceReadOnly(cfg serveConfig, log *slog.Logger) (dev.Device, devopen.Choice, bool, error) {
	if _, err := os.Stat(cfg.Device); err != nil {
		return nil, devopen.Choice{}, false, fmt.Errorf("--read-only serves an existing filesystem: %w", err)
	}
	d, choice, err := devopen.Open(cfg.Device, devopen.Options{Backend: cfg.Backend, ReadOnly: true, Logger: log})
	if err != nil {
		return nil, devopen.Choice{}, false, fmt.Errorf("open %s: %w", cfg.Device, err)
	}
	log.Warn("serving read-only: every change fails with EROFS, nothing is written to the device", "device", cfg.Device)
	return d, choice, false, nil
}
