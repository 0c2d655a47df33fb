package journal

// assert panics when cond is false. It is for programmer errors — a broken
// invariant of doc.go — never for operating errors, which are returned. It
// is always on: every check in this package is a comparison or two.
func assert(cond bool, invariant string) {
	if !cond {
		panic("journal: assertion failed: " + invariant)
	}
}
