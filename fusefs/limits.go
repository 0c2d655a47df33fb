package fusefs

import "time"

// The mount's bounds and defaults, each with its reason.
const (
	// ConnsDefault is how many connections a mount spreads its requests
	// over. One connection is pipelined already; more let the server read
	// requests of several kernel threads at once (docs/BENCHMARKS.md,
	// "FUSE mount", measures 1 against 4).
	ConnsDefault = 4
	// ConnsMax bounds --conns: the server limits connections per uid.
	ConnsMax = 16

	// AttrTimeoutDefault and EntryTimeoutDefault are how long the kernel
	// trusts attributes and names without asking (libfuse's default, 1s):
	// changes made by other clients show up within it; changes through
	// this mount at once (doc.go, "Kernel caching").
	AttrTimeoutDefault  = time.Second
	EntryTimeoutDefault = time.Second

	// readDirBatch is how many entries one readdir request asks for: the
	// kernel's readdir buffer (4 KiB) holds about a hundred names, so a
	// larger batch would be fetched and mostly thrown away on a seek.
	readDirBatch = 128

	// maxWrite bounds one FUSE write (and read) to the protocol's largest
	// data (1 MiB): one kernel request is one store request.
	maxWrite = 1 << 20
)
