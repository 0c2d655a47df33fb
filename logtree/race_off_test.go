//go:build !race

package logtree_test

// raceEnabled: the race detector is on (testdata/bulk is skipped).
const raceEnabled = false
