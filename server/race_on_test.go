//go:build race

package server

// raceEnabled: the race detector is on; its shadow memory grows the
// process's RSS with every byte of heap (TestServer_Budget_ReadFlood).
const raceEnabled = true
