package ebpf

import "errors"

var (
	// ErrUnsupported: this build has no BPF programs (not linux/amd64, where
	// the markers are not nop5 assembly and BPF reads no ABI0 stack).
	ErrUnsupported = errors.New("ebpf: unsupported on this platform (linux/amd64 only)")
	// ErrNoMarkers: the marker bodies were not found in an executable
	// mapping of this process.
	ErrNoMarkers = errors.New("ebpf: marker functions not found in /proc/self/maps")
	// ErrClosed: the Probes were closed.
	ErrClosed = errors.New("ebpf: probes closed")
)
