// Package memdev is an in-memory dev.Device that can lose power: it records
// every write and flush, and Crash builds the device a power cut would leave —
// every flushed write, any chosen subset of the unflushed ones, and at most one
// of them torn into 512-byte pieces. It also fails chosen operations on demand
// (the Nth read, write or flush, or every one from the Nth on). The crash
// tests of the engine, the journal and the log tree stand on it (Pebble's
// CrashClone and errorfs play this part there).
//
// # Crash model
//
// A completed write sits in the volatile cache until a flush makes it
// durable. A power cut keeps the durable image and any subset of the cached
// writes, applied in their original order (so of two kept writes to one
// sector the newer wins); one cached write may also be torn, keeping only
// some of its dev.TornSize pieces. Each piece is either all old or all new,
// and a tear never reaches outside its own write.
//
//	seq:      1     2     3    4     5    6     7    8     9
//	op:       w(A)  w(B)  F    w(C)  r    w(D)  F    w(E)  w(F)
//	                      │                     │
//	durable:              A B                   A B C D
//
//	Crash(p) after op 9: durable {A B C D}; unflushed [E F] = index 0, 1
//	  KeepNone()        → A B C D
//	  KeepAll()         → A B C D E F
//	  KeepSubset(0b10)  → A B C D F
//	  Tear{Index: 0, Pieces: [T F T ...]} → A B C D, and pieces 0, 2, ... of E
//	CrashAt(5, p): as if power failed right after op 5:
//	  durable {A B}; unflushed [C] = index 0 (the read at 5 changes nothing)
//
// Seq numbers every operation (each IO of a batch is one operation; a flush
// is one) in the order it took effect. Ops lists them; CrashAt(seq, p) crashes
// at any recorded point, so a test can cut power at every flush and between
// any two operations of a workload, and UnflushedAt(seq) lists what p then
// chooses from. A batch rejected before any I/O (alignment, range, closed
// device) is no operation: it gets no Seq, and each of its IOs' Err is set to
// the error the call returns.
//
// # Faults
//
// InjectError(kind, n, err) fails the nth operation of kind counted from the
// call; FailFrom fails every one from the nth on. An errno (syscall.EIO,
// syscall.ENOSPC, ...) comes back as dev.MediumError, so errors.Is(err,
// dev.ErrIO) holds; every injected error also matches ErrInjected. A failed
// read fills nothing and sets that IO's Err; the other IOs of its batch run.
// A failed write changes nothing — neither the data reads see nor what a
// crash can keep. A failed flush moves nothing: the unflushed writes stay
// unflushed, a crash may still lose any of them, and a later flush can still
// make them durable.
//
// # Memory
//
// Sectors are stored sparsely (a map of sector index to 4 KiB), so a 1 GiB
// device costs what was written to it. The history keeps every write's data
// until ForgetHistory: fine for tests, and the price of crashing at any point.
//
// # Invariants
//
//  1. A sector stored in an image (volatile, durable, a crash's) or in a
//     recorded write is never modified afterwards: images, history and crashed
//     devices share sectors freely, and a crashed device is independent of its
//     parent. (image.write stores full-slice-capped sectors; torn sectors are
//     fresh copies.)
//  2. Seq numbers strictly increase along the history and along the unflushed
//     list; the unflushed list is exactly the successful writes after the last
//     successful flush. (Checked on every append.)
//  3. The durable image changes only in a successful Flush; replaying the
//     history from its origin reproduces it, so Crash(p) and CrashAt(Seq(), p)
//     agree. (Checked by the tests on every workload.)
//  4. A failed operation changes no data and no durability state.
//  5. A torn write changes only bytes inside its own range, in whole
//     dev.TornSize pieces, each all old or all new.
package memdev
