// Package devtest is the conformance suite that every dev.Device
// implementation runs from its own tests:
//
//	func TestDevice_Conformance(t *testing.T) {
//		devtest.Run(t, func(t *testing.T, size int64) dev.Device {
//			return memdev.New(size)
//		})
//	}
//
// Each sub-test opens a fresh device, checks one clause of the contract in
// package dev (alignment, range, completion, durability calls, concurrency,
// Close), and closes the device. The suite cannot see durability — only a
// crashable device can (see dev/memdev) — so it checks that the durability
// calls succeed and keep the data readable. It runs in well under two seconds
// per implementation, so that every implementation can afford to run it on
// every test run, with -race.
//
// # Invariants
//
//  1. Every sub-test opens its own device and closes it (Run owns it): no
//     state crosses sub-tests, and open is never asked to close anything.
//  2. Every byte the suite writes is a function of its device offset and a
//     tag (fill), and every read is compared with that function (check), so a
//     sector written at the wrong offset, or a stale one, never passes.
//  3. Goroutines of the concurrent sub-test touch disjoint ranges only: the
//     contract leaves overlapping in-flight writes undefined.
package devtest
