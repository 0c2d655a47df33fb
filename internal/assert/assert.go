// Package assert holds ustore's always-on assertions: programmer errors
// (a broken invariant, an impossible state) panic with a message that names
// the invariant. Operating errors — bad input, I/O errors, corruption read
// from disk — are error values, never assertions.
package assert

// That panics with msg when cond is false. Keep cond cheap: it runs in
// production. Expensive checks belong behind the invariants build tag.
func That(cond bool, msg string) {
	if !cond {
		panic("assertion failed: " + msg)
	}
}
