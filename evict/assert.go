package evict

// assert panics with msg when cond is false. It is for programmer errors
// (DESIGN.md: errors are values, bugs are assertions) and always on, so
// callers keep it cheap; whole-structure checks run only under the
// invariants build tag (invariantsEnabled). evict imports no ustore
// package, so it carries this one-liner rather than a shared assert.
func assert(cond bool, msg string) {
	if !cond {
		panic(msg)
	}
}
