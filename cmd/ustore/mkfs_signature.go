package main

// The signatures mkfs looks for before it formats an existing file or
// device: ustore's own superblock magic and the magics blkid(8) and wipefs(8)
// recognise for the filesystems, volumes and partition tables most likely
// to hold someone's data. A table of fixed offsets rather than a call to
// `blkid -p`: it gives the same answer on every machine, with or without
// util-linux, and a false positive (two magic bytes that happen to match)
// only costs a --force.

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// signature is one magic at a fixed byte offset from the start of a device.
type signature struct {
	name  string // what was found, in the words blkid's TYPE uses where it has one
	off   int64
	magic string
}

// signatures is the table. Offsets from the formats' own definitions (and
// util-linux's libblkid probers, which read the same places).
var signatures = []signature{
	// ustore: "_USTORE1" at byte 32 of either superblock slot (64 KiB,
	// 128 KiB; docs/FORMAT.md). A slot with the magic is a ustore
	// filesystem even when its checksum is bad: that is a damaged one, for
	// fsck, not free space.
	{"a ustore filesystem", 64<<10 + 32, "_USTORE1"},
	{"a ustore filesystem", 128<<10 + 32, "_USTORE1"},
	// ext2/3/4: s_magic 0xEF53 (little-endian) at byte 56 of the
	// superblock at 1024.
	{"ext2/ext3/ext4", 1024 + 56, "\x53\xef"},
	// xfs: sb_magicnum "XFSB" at 0.
	{"xfs", 0, "XFSB"},
	// btrfs: magic "_BHRfS_M" at byte 64 of the superblock at 64 KiB.
	{"btrfs", 64<<10 + 64, "_BHRfS_M"},
	// swap: "SWAPSPACE2" (or the old "SWAP-SPACE") in the last 10 bytes of
	// the first page, for each page size Linux has.
	{"swap", 4096 - 10, "SWAPSPACE2"},
	{"swap", 4096 - 10, "SWAP-SPACE"},
	{"swap", 8192 - 10, "SWAPSPACE2"},
	{"swap", 16384 - 10, "SWAPSPACE2"},
	{"swap", 65536 - 10, "SWAPSPACE2"},
	// LUKS1 and LUKS2: "LUKS\xba\xbe" at 0.
	{"crypto_LUKS", 0, "LUKS\xba\xbe"},
	// LVM2 physical volume: label "LABELONE" in sector 1 (where pvcreate
	// puts it).
	{"LVM2_member", 512, "LABELONE"},
	// md RAID superblock 1.1 (at 0) and 1.2 (at 4 KiB): 0xa92b4efc.
	{"linux_raid_member", 0, "\xfc\x4e\x2b\xa9"},
	{"linux_raid_member", 4096, "\xfc\x4e\x2b\xa9"},
	// GPT: "EFI PART" at LBA 1, for 512- and 4096-byte sectors.
	{"a GPT partition table", 512, "EFI PART"},
	{"a GPT partition table", 4096, "EFI PART"},
	// iso9660: "CD001" in the primary volume descriptor, sector 16 of 2048.
	{"iso9660", 16*2048 + 1, "CD001"},
	// A DOS boot sector: 0x55AA at 510 ends an MBR partition table and a
	// FAT or NTFS boot sector alike.
	{"a DOS boot sector (MBR partition table, FAT or NTFS)", 510, "\x55\xaa"},
}

// signatureSpan is how many bytes from the start the table reads.
var signatureSpan = func() int64 {
	var n int64
	for _, s := range signatures {
		n = max(n, s.off+int64(len(s.magic)))
	}
	return n
}()

// foundSignature is a signature present on a device.
type foundSignature struct {
	name string
	off  int64
}

func (f foundSignature) String() string { return fmt.Sprintf("%s (magic at byte %d)", f.name, f.off) }

// probeSignatures reads the start of r (a file or block device, possibly
// shorter than the table's span) and returns every signature of the table
// found there, one per name, in the table's order.
func probeSignatures(r io.ReaderAt) ([]foundSignature, error) {
	buf := make([]byte, signatureSpan)
	n, err := r.ReadAt(buf, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	buf = buf[:n]
	var found []foundSignature
	seen := map[string]bool{}
	for _, s := range signatures {
		end := s.off + int64(len(s.magic))
		if end > int64(len(buf)) || seen[s.name] || string(buf[s.off:end]) != s.magic {
			continue
		}
		seen[s.name] = true
		found = append(found, foundSignature{s.name, s.off})
	}
	return found, nil
}

// probePath is probeSignatures on the file or device at path.
func probePath(path string) ([]foundSignature, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return probeSignatures(f)
}

// describeSignatures lists found signatures in one line.
func describeSignatures(found []foundSignature) string {
	s := make([]string, len(found))
	for i, f := range found {
		s[i] = f.String()
	}
	return strings.Join(s, ", ")
}
