package store

import "unsafe"

// What an in-memory inode is charged against the cache budget
// (--cache-size), which it shares with tree nodes and clean data blocks
// (itable.go). The charge is computed from the sizes of what the inode
// holds, as the Go runtime lays them out (go1.26: swiss-table maps, the
// size classes of its allocator), not guessed: TestItable_Charge_Heap
// compares it with the heap that loading many inodes really takes, and
// TestItable_PageMapBytes_Heap the range state's maps with theirs.
//
// An inode holds its struct, its range state (pageState: two maps of
// buffered pages, whose pages themselves are the dirty budget's) and one
// slot in each of four indexes: the table shard's map, the table's
// lock-free mirror (fast, a sync.Map), and the inode cache's item and map
// slot. It caches no names and no extent map: its extents and names are
// tree items, in cached nodes charged as nodes.
//
// Maps never shrink in Go: a map's memory is set by the most entries it
// ever held. So the range state is charged by each map's peak since it
// was made (pageState.dirtyPeak, wbPeak), and the maps are made afresh
// when the inode has no buffered page left (markClean), which returns
// their memory and the charge to the fixed part. The charge is updated
// (inodeTable.rechargeLocked) whenever the peaks change what it computes,
// so it follows the maps as they grow and as they are dropped.

// Layout figures of the go1.26 runtime (internal/runtime/maps, sync,
// internal/runtime/gc's size classes), for the maps and indexes above.
const (
	// mapHeaderBytes is a map's header (maps.Map): used, seed, dirPtr,
	// dirLen, four bytes of depth and flags, clearSeq.
	mapHeaderBytes = 48
	// mapGroupSlots entries share a group, with one control byte each.
	mapGroupSlots = 8
	// mapTableBytes is one table's header (maps.table): counts, depth,
	// index and its groups' reference.
	mapTableBytes = 32
	// mapTableSlotsMax is the most slots a table grows to before it
	// splits in two; mapLoadNum/mapLoadDen is the load at which a table
	// grows (7/8).
	mapTableSlotsMax       = 1024
	mapLoadNum, mapLoadDen = 7, 8
	// mallocHeaderBytes is the header the allocator puts before a
	// pointerful object larger than mallocHeaderAbove.
	mallocHeaderBytes = 8
	mallocHeaderAbove = 512
	// syncMapEntryBytes is a sync.Map entry (internal/sync.entry: the
	// node kind, the overflow link, the key and value interfaces), and
	// syncMapKeyBytes the boxed key (an Ino past 255 is allocated when
	// put in an interface). syncMapIndirectBytes is an inner node of its
	// hash trie (16 children, parent, lock, flags), shared by the
	// entries below it: charged as one per syncMapFanout/2 entries, a
	// half-full node's share.
	syncMapEntryBytes    = 48
	syncMapKeyBytes      = 8
	syncMapIndirectBytes = 160
	syncMapFanout        = 16
	// evictItemBytes is the inode cache's item (evict.item: key, entry,
	// bytes, reference bit, ring links).
	evictItemBytes = 48
)

// sizeClasses are the allocator's object sizes up to 32 KiB
// (internal/runtime/gc.SizeClassToSize); larger objects take whole pages.
var sizeClasses = [...]int64{8, 16, 24, 32, 48, 64, 80, 96, 112, 128, 144, 160, 176, 192, 208, 224, 240,
	256, 288, 320, 352, 384, 416, 448, 480, 512, 576, 640, 704, 768, 896, 1024, 1152, 1280, 1408, 1536,
	1792, 2048, 2304, 2688, 3072, 3200, 3456, 4096, 4864, 5376, 6144, 6528, 6784, 6912, 8192, 9472, 9728,
	10240, 10880, 12288, 13568, 14336, 16384, 18432, 19072, 20480, 21760, 24576, 27264, 28672, 32768}

// heapObjectBytes is what the allocator takes for an object of n bytes
// that holds pointers: its size class, after the malloc header when it
// needs one, or whole 8 KiB pages past 32 KiB.
func heapObjectBytes(n int64) int64 {
	if n > mallocHeaderAbove {
		n += mallocHeaderBytes
	}
	for _, c := range sizeClasses {
		if n <= c {
			return c
		}
	}
	return (n + 8191) &^ 8191
}

// mapBytes is the memory of a map with slotBytes-byte entries (key and
// value) that has held at most n entries: its header; for up to a group's
// worth, one group; past that, tables of groups that double at 7/8 load
// up to mapTableSlotsMax slots, then split, and the directory of tables.
func mapBytes(n int, slotBytes int64) int64 {
	b := heapObjectBytes(mapHeaderBytes)
	if n == 0 {
		return b
	}
	groupBytes := mapGroupSlots + mapGroupSlots*slotBytes
	if n <= mapGroupSlots {
		return b + heapObjectBytes(groupBytes)
	}
	slots := 2 * mapGroupSlots
	for slots < mapTableSlotsMax && slots*mapLoadNum/mapLoadDen < n {
		slots *= 2
	}
	tables, dir := 1, 1
	if full := mapTableSlotsMax * mapLoadNum / mapLoadDen; n > full {
		// A full table splits in two by the next bit of the hash
		// (extendible hashing). With hashes spread evenly the tables
		// fill at the same pace and split together: a power of two of
		// them, and the directory as many. Within a few percent of a
		// doubling some split before the others (up to a third more
		// memory just past it); counting them all split from 31/32 of
		// full keeps the charge from falling short there, at the price
		// of charging up to twice the tables in that band.
		for tables*full*31/32 < n {
			tables *= 2
		}
		dir = tables
	}
	perTable := heapObjectBytes(mapTableBytes) + heapObjectBytes(int64(slots/mapGroupSlots)*groupBytes)
	return b + heapObjectBytes(int64(dir)*8) + int64(tables)*perTable
}

// pageMapBytes is mapBytes for an inode's map of buffered pages
// (map[uint64]*page).
func pageMapBytes(n int) int64 { return mapBytes(n, 16) }

// indexSlotBytes is an entry's share of a map of 16-byte slots shared by
// many entries (the table shard's map[Ino]*inode, the inode cache's
// map[uint64]*item): a slot and its control byte, at the lowest load a
// table has just after it doubled (half of 7/8), so never less than the
// entry's share.
const indexSlotBytes = (16 + 1) * 2 * mapLoadDen / mapLoadNum

// inodeFixedBytes is the charge of an inode with no buffered page: its
// struct, its two empty page maps, its slots in the four indexes.
var inodeFixedBytes = heapObjectBytes(int64(unsafe.Sizeof(inode{}))) +
	2*pageMapBytes(0) +
	indexSlotBytes + // the table shard's map
	heapObjectBytes(syncMapEntryBytes) + heapObjectBytes(syncMapKeyBytes) + syncMapIndirectBytes*2/syncMapFanout + // fast
	heapObjectBytes(evictItemBytes) + indexSlotBytes // the inode cache's item and map slot

// chargeLocked is what in should be charged now (in.mu held, or in not
// yet shared).
func (in *inode) chargeLocked() int64 {
	return inodeFixedBytes - 2*pageMapBytes(0) + pageMapBytes(in.pages.dirtyPeak) + pageMapBytes(in.pages.wbPeak)
}

// CacheBytes and Pinned make an inode an entry of the inode cache
// (evict.Entry). The charge is the one last computed (chargeLocked),
// stored in charge for the cache to read under its shard lock.
func (in *inode) CacheBytes() int64 { return in.charge.Load() }

// Pinned: an inode with buffered pages is in the dirty set, which holds a
// reference to it; the rest of what keeps an inode in memory (references,
// its mu held) is read under the table's locks by inodeTable.tryEvict.
func (in *inode) Pinned() bool { return in.buffered.Load() }
