//go:build invariants

package engine

import (
	"strings"
	"testing"
)

// A node changed after sealNodes is caught once its commit's writes are
// flushed; an unchanged one passes.
func TestCheckUnchangedSinceSeal(t *testing.T) {
	eb := newExtentBuffer(1<<20, make([]byte, 4096), nil)
	for i := range eb.data {
		eb.data[i] = byte(i)
	}
	sealNodes([]*ExtentBuffer{eb})
	checkUnchangedSinceSeal([]*ExtentBuffer{eb})

	eb.data[hdrFsid+100] ^= 1
	defer func() {
		if msg, _ := recover().(string); !strings.Contains(msg, "changed after it was sealed") {
			t.Fatalf("a node changed after its seal: recovered %q", msg)
		}
	}()
	checkUnchangedSinceSeal([]*ExtentBuffer{eb})
}
