package fsyncbench

// Bounds on the configurations, each with its reason.
const (
	// jobsMax bounds a workload's concurrent jobs (connections on a
	// server, whose own bound is 1024).
	jobsMax = 1024
	// ioBytesMax bounds one write or read: the protocol's frame carries
	// at most 1 MiB of data (proto.IOSizeMax).
	ioBytesMax = 1 << 20
	// filesMax bounds dir-fsync's directory (10× the patch's million).
	filesMax = 10_000_000
)
