//go:build race

package main

// raceEnabled: this test binary runs under the race detector, so the
// binary the serve tests build does too (and reuses its compiled packages).
const raceEnabled = true
