package trace

// The phases PhaseBegin and PhaseEnd mark. A commit marks PhaseCommit
// around the whole commit and one of the next four around each of its
// steps (the child spans of journal.commit); a log sync marks PhaseLogSync
// around its durable write. BPF keeps one histogram per phase.
const (
	PhaseCommit      uint32 = 1
	PhaseUpdateRoots uint32 = 2
	PhaseWriteNodes  uint32 = 3
	PhaseFlush       uint32 = 4
	PhaseSuper       uint32 = 5
	PhaseLogSync     uint32 = 6
)

// phaseNames names each phase as its span does (PhaseCommit as the commit
// histogram, PhaseLogSync as the log sync's span).
var phaseNames = [...]string{
	PhaseCommit:      "commit",
	PhaseUpdateRoots: "update_roots",
	PhaseWriteNodes:  "write_nodes",
	PhaseFlush:       "flush",
	PhaseSuper:       "super",
	PhaseLogSync:     "log_sync",
}

// PhaseName returns phase's name, "" for an unknown phase.
func PhaseName(phase uint32) string {
	if int(phase) < len(phaseNames) {
		return phaseNames[phase]
	}
	return ""
}

// PhaseByName returns the phase named name (the commit phases' span names),
// 0 for none.
func PhaseByName(name string) uint32 {
	for i, n := range phaseNames {
		if n == name && n != "" {
			return uint32(i)
		}
	}
	return 0
}
