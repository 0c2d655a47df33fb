package ebpf

// The bounds of the BPF maps (declared in bpf/*.bpf.c; these constants are
// their mirror, checked against the compiled objects by
// TestLimits_MatchObjects), with their reasons. Every map is bounded: a
// full in-flight map drops the measurement (counted in Stats), never
// blocks or grows.
const (
	// waitStartsMax bounds lock waits in flight (markers: wait_starts):
	// one per goroutine blocked on a lock, far fewer than the server's
	// request bound times its tree depth.
	waitStartsMax = 8192
	// lockHistMax bounds lock-wait histogram entries (lock_hist): 65
	// slots × (trees × levels × 2 modes + the log mutex).
	lockHistMax = 8192
	// phaseStartsMax bounds phases in flight (phase_starts): commits are
	// serialised; log syncs of different transactions may overlap.
	phaseStartsMax = 256
	// phaseHistMax bounds phase histogram entries: 65 slots × 6 phases.
	phaseHistMax = 1024
	// eventsBytes is the ring buffer of long waits: 256 KiB, 4,681
	// records of 56 bytes — seconds of back-to-back 1 ms waits.
	eventsBytes = 256 << 10
	// uringStartsMax bounds io_uring requests in flight (uring_starts):
	// above any ring depth ustore sets up (ring.Config.Entries ≤ 4096).
	uringStartsMax = 8192
	// uringHistMax bounds io_uring histogram entries: 65 slots × opcodes.
	uringHistMax = 4096
	// klockStartsMax bounds kernel lock waits in flight (klock_starts): one
	// per thread of the process.
	klockStartsMax = 4096
	// klockHistMax bounds kernel lock histogram entries: 65 × flag sets.
	klockHistMax = 1024
	// reactorsMax is the number of reactor threads measured (reactors'
	// slots, offcpu_starts): one per ring, and a server has one ring per
	// device.
	reactorsMax = 8
	// offcpuHistMax bounds off-CPU histogram entries: 65 × 2 reasons.
	offcpuHistMax = 256
)
