package ring

// Bounds of the ring, each with its reason.
const (
	// entriesDefault: SQ entries when Config.Entries is 0. 256 covers a
	// commit's batch of dirty nodes and queue depth 128 with room to spare;
	// larger rings need large contiguous kernel allocations (ENOMEM seen in
	// other bindings at 10,000).
	entriesDefault = 256
	// entriesMax: the kernel refuses more than 32768 SQ entries without CLAMP.
	entriesMax = 32768
	// probeOpsMax: room for every opcode in a REGISTER_PROBE answer (the
	// opcode is a u8).
	probeOpsMax = 256
	// reapBatchMax bounds how many CQEs one reap pass copies before the head
	// is published, so the kernel can post more while we complete waiters.
	reapBatchMax = 256
	// fixedBytesMax: one registered iovec may not exceed 1 GiB.
	fixedBytesMax = 1 << 30
)

// submitBatchDefault: see Config.SubmitBatchMax.
const submitBatchDefault = 2

// iovecsMax is the kernel's UIO_MAXIOV: a readv/writev takes at most 1024
// iovecs.
const iovecsMax = 1024
