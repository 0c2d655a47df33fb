//go:build invariants

package engine

// invariantsOn enables the expensive checks: the invariants build tag
// (`go test -tags invariants`, `make invariants`).
const invariantsOn = true
