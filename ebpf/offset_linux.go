//go:build linux && amd64

package ebpf

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// mapping is the file-backed executable mapping that holds a PC.
type mapping struct {
	path   string
	offset uint64 // the PC's file offset in path
}

// fileOffsets finds, in /proc/self/maps, the executable mapping of each pc
// and returns its path (all must share one) and each pc's file offset.
// Uprobes are placed by file offset because test binaries and stripped
// builds have no symbol table, and a marker's symbol is the ".abi0" body
// anyway; the offset is right under PIE too, since it is taken from the
// live mapping.
func fileOffsets(pcs []uintptr) (string, []uint64, error) {
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return "", nil, fmt.Errorf("ebpf: %w", err)
	}
	defer f.Close()
	found := make([]*mapping, len(pcs))
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// start-end perms offset dev inode path
		fields := strings.Fields(sc.Text())
		if len(fields) < 6 || !strings.Contains(fields[1], "x") {
			continue
		}
		lo, hi, ok := strings.Cut(fields[0], "-")
		start, err1 := strconv.ParseUint(lo, 16, 64)
		end, err2 := strconv.ParseUint(hi, 16, 64)
		off, err3 := strconv.ParseUint(fields[2], 16, 64)
		if !ok || err1 != nil || err2 != nil || err3 != nil {
			continue
		}
		for i, pc := range pcs {
			if uint64(pc) >= start && uint64(pc) < end {
				found[i] = &mapping{path: fields[5], offset: uint64(pc) - start + off}
			}
		}
	}
	if err := sc.Err(); err != nil {
		return "", nil, fmt.Errorf("ebpf: read /proc/self/maps: %w", err)
	}
	offs := make([]uint64, len(pcs))
	for i, m := range found {
		if m == nil || pcs[i] == 0 {
			return "", nil, fmt.Errorf("%w: pc %#x", ErrNoMarkers, pcs[i])
		}
		if m.path != found[0].path {
			return "", nil, fmt.Errorf("%w: markers in %s and %s", ErrNoMarkers, found[0].path, m.path)
		}
		offs[i] = m.offset
	}
	return found[0].path, offs, nil
}
