//go:build linux && amd64

package ebpf

import (
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestProbes_KernelLocks_Storm: threads of this process appending to one
// file and mapping/unmapping memory contend on kernel locks (the inode's
// rwsem, mmap_lock); lock:contention_begin/end, filtered to this tgid,
// count some. The storm runs until they do (contention is scheduling;
// the deadline only bounds a broken build).
func TestProbes_KernelLocks_Storm(t *testing.T) {
	p := attachAll(t, Config{})
	f, err := os.OpenFile(filepath.Join(t.TempDir(), "append"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	counted := func() uint64 {
		hs, err := p.KernelLocks()
		if err != nil {
			t.Fatal(err)
		}
		var n uint64
		for _, h := range hs {
			n += h.Count()
		}
		return n
	}
	buf := make([]byte, 512)
	deadline := time.Now().Add(2 * time.Minute)
	for counted() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no kernel lock contention counted in 2 minutes of appends and mmaps")
		}
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				runtime.LockOSThread() // eight kernel threads, not goroutines on two
				defer runtime.UnlockOSThread()
				for range 200 {
					if _, err := f.Write(buf); err != nil {
						t.Error(err)
						return
					}
					m, err := unix.Mmap(-1, 0, 1<<16, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
					if err != nil {
						t.Error(err)
						return
					}
					m[0] = 1
					unix.Munmap(m)
				}
			})
		}
		wg.Wait()
	}
	hs, _ := p.KernelLocks()
	for flags, h := range hs {
		t.Logf("%s: %d waits, mean %v", ContentionFlags(flags), h.Count(), h.Mean())
	}
}
