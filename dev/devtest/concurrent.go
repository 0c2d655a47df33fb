package devtest

import (
	"sync"
	"testing"

	"ustore/dev"
)

const (
	// workerCount goroutines share the device, each on its own region.
	workerCount = 16
	// roundCount rounds per goroutine: each writes, reads back and (every
	// other round) flushes. Small, because a real flush costs milliseconds.
	roundCount = 6
	// iosPerRound IOs per batch, spread over the goroutine's region.
	iosPerRound = 4
)

// testConcurrent runs Read, Write, Flush and WriteDurable from workerCount
// goroutines at once on disjoint regions (Invariant 3), each checking its own
// data after every round, then checks every region's final data.
func testConcurrent(t *testing.T, d dev.Device) {
	region := d.Size() / workerCount
	stride := region / iosPerRound
	if stride < 3*dev.SectorSize {
		t.Fatalf("device of %d bytes too small for %d regions", d.Size(), workerCount)
	}
	// batch returns round r's writes of goroutine g: iosPerRound IOs of
	// one to three sectors, the length varying with the round so that a
	// read shows which round's write landed.
	batch := func(g, r int) []dev.IO {
		ios := make([]dev.IO, iosPerRound)
		for k := range ios {
			off := int64(g)*region + int64(k)*stride
			n := ((r+k)%3 + 1) * dev.SectorSize
			ios[k] = dev.IO{Off: off, Buf: pattern(n, off, tagOf(g, r))}
		}
		return ios
	}

	var wg sync.WaitGroup
	for g := range workerCount {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range roundCount {
				ios := batch(g, r)
				var err error
				if r == roundCount/2 {
					err = d.WriteDurable(ios[:2], ios[2:])
				} else {
					err = d.Write(ios)
				}
				if err != nil {
					t.Errorf("goroutine %d round %d: write: %v", g, r, err)
					return
				}
				reads := make([]dev.IO, len(ios))
				for k, w := range ios {
					reads[k] = dev.IO{Off: w.Off, Buf: garbage(len(w.Buf))}
				}
				if err := d.Read(reads); err != nil {
					t.Errorf("goroutine %d round %d: read: %v", g, r, err)
					return
				}
				for _, rd := range reads {
					if !check(t, "concurrent read-back", rd.Buf, rd.Off, tagOf(g, r)) {
						return
					}
				}
				if r%2 == 1 {
					if err := d.Flush(); err != nil {
						t.Errorf("goroutine %d round %d: flush: %v", g, r, err)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	for g := range workerCount {
		for _, w := range batch(g, roundCount-1) {
			readBack(t, d, "final content", w.Off, len(w.Buf), tagOf(g, roundCount-1))
		}
	}
}

// tagOf names the data of goroutine g's round r.
func tagOf(g, r int) uint64 { return uint64(1000 + g*roundCount + r) }
