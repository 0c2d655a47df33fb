package engine

import "fmt"

// XattrEntry is one extended attribute: its whole name ("user.foo") and its
// value. XATTR_ITEM (ino, XATTR_ITEM, crc32c(name)) holds a list of them —
// every attribute of the inode whose name has that hash, as a DIR_ITEM
// holds every name of one hash (btrfs keeps xattrs in dir items too).
//
//	+-------------+--------------+------+-------+
//	| name len u16| value len u16| name | value |   repeated
//	+-------------+--------------+------+-------+
type XattrEntry struct {
	Name  []byte
	Value []byte
}

const xattrEntryHeader = 2 + 2

// XattrNameMax is the longest attribute name, its namespace prefix
// included (Linux: XATTR_NAME_MAX).
const XattrNameMax = 255

// XattrValueMax is the largest value the VFS passes (Linux:
// XATTR_SIZE_MAX); the store's own bound is lower, what one item holds
// (XattrValueRoom).
const XattrValueMax = 64 << 10

// XattrEntrySize is the encoded size of an entry with a name of n bytes and
// a value of v.
func XattrEntrySize(n, v int) int { return xattrEntryHeader + n + v }

// XattrValueRoom is the largest value an attribute named with n bytes can
// have alone in an item of at most itemDataMax bytes.
func XattrValueRoom(itemDataMax, n int) int { return itemDataMax - xattrEntryHeader - n }

// EncodeXattrEntries appends the encoding of es to b.
func EncodeXattrEntries(b []byte, es ...XattrEntry) []byte {
	for _, e := range es {
		b = le.AppendUint16(b, uint16(len(e.Name)))
		b = le.AppendUint16(b, uint16(len(e.Value)))
		b = append(b, e.Name...)
		b = append(b, e.Value...)
	}
	return b
}

// DecodeXattrEntries decodes an XATTR_ITEM payload; names and values alias
// b. An empty payload is corrupt: the item goes with its last entry.
func DecodeXattrEntries(b []byte) ([]XattrEntry, error) {
	if len(b) == 0 {
		return nil, fmt.Errorf("%w: empty xattr item", ErrCorruption)
	}
	var es []XattrEntry
	for len(b) > 0 {
		if len(b) < xattrEntryHeader {
			return nil, fmt.Errorf("%w: xattr entry header cut short (%d bytes)", ErrCorruption, len(b))
		}
		n, v := int(le.Uint16(b)), int(le.Uint16(b[2:]))
		if n == 0 || n > XattrNameMax || len(b) < XattrEntrySize(n, v) {
			return nil, fmt.Errorf("%w: xattr entry of a %d-byte name and a %d-byte value in %d bytes", ErrCorruption, n, v, len(b))
		}
		name := b[xattrEntryHeader : xattrEntryHeader+n]
		for _, p := range es {
			if string(p.Name) == string(name) {
				return nil, fmt.Errorf("%w: xattr %q twice in one item", ErrCorruption, name)
			}
		}
		es = append(es, XattrEntry{Name: name, Value: b[xattrEntryHeader+n : XattrEntrySize(n, v)]})
		b = b[XattrEntrySize(n, v):]
	}
	return es, nil
}

// One attribute of the longest name with a value of at least 512 bytes fits in
// an item at the smallest node size. A compile-time check: the array
// length is negative otherwise.
var _ [(NodeSizeMin-headerSize)/4 - itemHeaderSize - (xattrEntryHeader + XattrNameMax + 512)]struct{}
