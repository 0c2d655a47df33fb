//go:build !invariants

package evict

// invariantsEnabled turns on the expensive checks: the whole shard is
// checked after every change (go test -tags invariants).
const invariantsEnabled = false
