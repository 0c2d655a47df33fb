package engine

import "strconv"

// Bytenr is a byte address on the device (btrfs: bytenr): where a node or
// a data extent starts. On disk it is a u64 (node headers, block pointers,
// root refs, file extent items).
type Bytenr uint64

// String writes the address in decimal, as every message and dump has.
func (b Bytenr) String() string { return strconv.FormatUint(uint64(b), 10) }
