package fsyncbench_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"ustore/bench/fsyncbench"
	"ustore/dev/memdev"
	"ustore/journal"
	"ustore/server"
	"ustore/store"
)

// startServer runs a store on an in-memory device and a server on it, in
// this process, and returns a target on it whose counters are the store's
// Stats (under the names `ustore serve --metrics-addr` gives them).
func startServer(t *testing.T, opts store.Options) *fsyncbench.Ustore {
	t.Helper()
	d := memdev.New(256 << 20)
	if err := store.Mkfs(d, store.MkfsOptions{}); err != nil {
		t.Fatal(err)
	}
	opts.Logger = slog.New(slog.DiscardHandler)
	st, err := store.Open(d, opts)
	if err != nil {
		t.Fatal(err)
	}
	// A socket path is at most 108 bytes: a short directory of its own.
	dir, err := os.MkdirTemp("", "fsyncbench-")
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "s.sock")
	srv, err := server.New(st, server.Options{Socket: sock, SocketMode: 0o600, Logger: opts.Logger})
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(context.Background()) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Error(err)
		}
		if err := <-served; err != nil && !errors.Is(err, server.ErrClosed) {
			t.Error(err)
		}
		if err := st.Close(ctx); err != nil {
			t.Error(err)
		}
		d.Close()
		os.RemoveAll(dir)
	})
	return fsyncbench.NewUstore(sock, fsyncbench.UstoreOptions{Counters: func() (fsyncbench.Counters, error) {
		return fsyncCounters(st.Stats()), nil
	}})
}

// fsyncCounters are the store's fsync outcome counters (FsyncCommitted,
// FsyncCommit, and those log trees add), as /metrics names them.
func fsyncCounters(s store.Stats) fsyncbench.Counters {
	c := fsyncbench.Counters{}
	v := reflect.ValueOf(s)
	for i := range v.NumField() {
		name := v.Type().Field(i).Name
		if f := v.Field(i); strings.HasPrefix(name, "Fsync") && f.Kind() == reflect.Uint64 {
			c["ustore_store_fsync_"+strings.ToLower(strings.TrimPrefix(name, "Fsync"))+"_total"] = float64(f.Uint())
		}
	}
	return c
}

// targets are the two kinds: a directory here, a server in process.
func targets(t *testing.T) map[string]fsyncbench.Target {
	dir, err := fsyncbench.NewDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return map[string]fsyncbench.Target{"dir": dir, "ustore": startServer(t, store.Options{})}
}

// fsyncs is how many fsyncs the server counted, whichever way they went.
func fsyncs(c fsyncbench.Counters) float64 {
	var n float64
	for k, v := range c {
		if strings.HasPrefix(k, "ustore_store_fsync_") {
			n += v
		}
	}
	return n
}

// plausible checks a latency summary of n samples.
func plausible(t *testing.T, what string, l fsyncbench.Latency, n int64) {
	t.Helper()
	if l.Count == 0 || int64(l.Count) != n || l.P50US <= 0 || l.P50US > l.P99US || l.P99US > l.MaxUS || l.MeanUS <= 0 ||
		l.MeanUS > l.MaxUS {
		t.Errorf("%s: implausible latency %+v for %d samples", what, l, n)
	}
}

// empty checks that a workload cleaned up after itself.
func empty(t *testing.T, tg fsyncbench.Target) {
	t.Helper()
	if d, ok := tg.(*fsyncbench.Dir); ok {
		ents, err := os.ReadDir(strings.TrimPrefix(d.Name(), "dir "))
		if err != nil || len(ents) != 0 {
			t.Errorf("left behind: %v %v", ents, err)
		}
	}
}

var quick = fsyncbench.Options{Seed: 1}

func TestRandWrite(t *testing.T) {
	for name, tg := range targets(t) {
		t.Run(name, func(t *testing.T) {
			rs, err := fsyncbench.RandWrite(context.Background(), tg, fsyncbench.RandWriteConfig{
				Jobs: []int{1, 3}, FileSize: 256 << 10, Duration: 50 * time.Millisecond, Options: quick,
			})
			if err != nil {
				t.Fatal(err)
			}
			if len(rs) != 2 || rs[0].Jobs != 1 || rs[1].Jobs != 3 {
				t.Fatalf("results %+v", rs)
			}
			for _, r := range rs {
				if r.Writes < r.Fsyncs || r.Fsyncs == 0 || r.WriteIOPS <= 0 || r.Seconds < 0.05 || r.FsyncEvery != 4 {
					t.Errorf("implausible %+v", r)
				}
				plausible(t, "fsync", r.Fsync, r.Fsyncs)
				if name == "ustore" && fsyncs(r.Counters) < float64(r.Fsyncs) {
					t.Errorf("the server counted %v fsyncs, the workload %d in its window: %v", fsyncs(r.Counters), r.Fsyncs, r.Counters)
				}
			}
			empty(t, tg)
			var buf bytes.Buffer
			fsyncbench.WriteText(&buf, &fsyncbench.Report{Workload: "fsync-randwrite", Target: tg.Name(), Results: rs})
			for _, want := range []string{"write IOPS", "fsync mean µs", "p99.9 µs"} {
				if !strings.Contains(buf.String(), want) {
					t.Errorf("table lacks %q:\n%s", want, buf.String())
				}
			}
			if name == "ustore" && !strings.Contains(buf.String(), "store_fsync_") {
				t.Errorf("no server counters in\n%s", buf.String())
			}
		})
	}
}

func TestDirFsync(t *testing.T) {
	for name, tg := range targets(t) {
		t.Run(name, func(t *testing.T) {
			r, err := fsyncbench.DirFsync(context.Background(), tg, fsyncbench.DirFsyncConfig{Files: 300, Deletes: 10, Options: quick})
			if err != nil {
				t.Fatal(err)
			}
			if r.Files != 300 || r.Deleted != 10 || r.CreateMS <= 0 || r.FsyncAfterCreateMS <= 0 || r.SyncMS <= 0 ||
				r.DeleteMS <= 0 || r.FsyncAfterDeleteMS <= 0 {
				t.Errorf("implausible %+v", r)
			}
			if name == "ustore" {
				for _, k := range []string{"fsync_after_create", "fsync_after_delete"} {
					if fsyncs(r.Counters[k]) < 1 {
						t.Errorf("%s: the server counted no fsync: %v", k, r.Counters)
					}
				}
			}
			empty(t, tg)
			var buf bytes.Buffer
			fsyncbench.WriteText(&buf, &fsyncbench.Report{Workload: "dir-fsync", Target: tg.Name(), Results: r})
			if !strings.Contains(buf.String(), "dir fsync after delete") {
				t.Errorf("table:\n%s", buf.String())
			}
		})
	}
}

func TestCsumFsync(t *testing.T) {
	for name, tg := range targets(t) {
		t.Run(name, func(t *testing.T) {
			r, err := fsyncbench.CsumFsync(context.Background(), tg, fsyncbench.CsumFsyncConfig{
				LargeSize: 2 << 20, SmallSize: 128 << 10, FsyncEvery: 10, Duration: 50 * time.Millisecond, Options: quick,
			})
			if err != nil {
				t.Fatal(err)
			}
			for _, ph := range []fsyncbench.CsumPhase{r.Large, r.Small} {
				if ph.Files != 2 || ph.Fsyncs == 0 || ph.Fsyncs%2 != 0 && ph.Writes == 0 || ph.RequestsPerSec <= ph.WritesPerSec {
					t.Errorf("implausible phase %+v", ph)
				}
				plausible(t, "fsync", ph.Fsync, ph.Fsyncs)
			}
			if r.Large.FileSize != 2<<20 || r.Small.FileSize != 128<<10 || r.P50Ratio <= 0 || r.MeanRatio <= 0 {
				t.Errorf("implausible %+v", r)
			}
			empty(t, tg)
			var buf bytes.Buffer
			fsyncbench.WriteText(&buf, &fsyncbench.Report{Workload: "csum-fsync", Target: tg.Name(), Results: r})
			if !strings.Contains(buf.String(), "large over small") {
				t.Errorf("table:\n%s", buf.String())
			}
		})
	}
}

func TestCommittedCheck_Modes(t *testing.T) {
	for name, tg := range targets(t) {
		t.Run(name, func(t *testing.T) {
			for _, mode := range fsyncbench.CommittedModes {
				r, err := fsyncbench.CommittedCheck(context.Background(), tg, fsyncbench.CommittedConfig{
					Clients: 2, Depth: 3, RW: mode, FileSize: 256 << 10, Duration: 50 * time.Millisecond,
					Warmup: 5 * time.Millisecond, Options: quick,
				})
				if err != nil {
					t.Fatal(err)
				}
				if r.Ops == 0 || r.Ops != r.Writes+r.Reads+r.Fsyncs || r.OpsPerSec <= 0 {
					t.Errorf("%s: implausible %+v", mode, r)
				}
				plausible(t, mode, r.Latency, r.Ops)
				switch mode {
				case fsyncbench.RWWrite:
					if r.Reads+r.Fsyncs != 0 {
						t.Errorf("randwrite read or fsynced: %+v", r)
					}
				case fsyncbench.RWRead:
					if r.Writes+r.Fsyncs != 0 {
						t.Errorf("randread wrote or fsynced: %+v", r)
					}
				case fsyncbench.RWFsync:
					if r.Writes+r.Reads != 0 || name == "ustore" && r.Counters["ustore_store_fsync_committed_total"] < float64(r.Fsyncs) {
						// Every fsync of the clean file finds it committed.
						t.Errorf("fsync mode: %+v", r)
					}
				}
			}
			empty(t, tg)
		})
	}
}

// TestCommittedCompare: the two servers, each mode, alternating; the
// ratios pair them.
func TestCommittedCompare(t *testing.T) {
	free := startServer(t, store.Options{})
	locked := startServer(t, store.Options{Ablations: journal.Ablations{CommittedLocked: true}})
	rs, err := fsyncbench.CommittedCompare(context.Background(), free, locked, fsyncbench.CommittedConfig{
		Clients: 2, Depth: 2, FileSize: 128 << 10, Duration: 30 * time.Millisecond, Warmup: time.Millisecond, Options: quick,
	}, []string{fsyncbench.RWMixed, fsyncbench.RWFsync}, 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 2*2*2 || rs[0].Label != fsyncbench.LabelLockFree || rs[2].Label != fsyncbench.LabelLocked {
		t.Fatalf("results %+v", rs)
	}
	q := fsyncbench.CommittedRatios(rs)
	if len(q) != 2 || q[0].RW != fsyncbench.RWMixed || q[1].RW != fsyncbench.RWFsync || q[0].Ratio <= 0 || q[1].Ratio <= 0 {
		t.Fatalf("ratios %+v", q)
	}
	var buf bytes.Buffer
	fsyncbench.WriteText(&buf, &fsyncbench.Report{Workload: "committed-check", Results: rs})
	if !strings.Contains(buf.String(), "lock-free Committed over the locked ablation") {
		t.Errorf("table:\n%s", buf.String())
	}
}

func TestConfigs_Validate(t *testing.T) {
	for _, err := range []error{
		fsyncbench.RandWriteConfig{Jobs: []int{0}}.Validate(),
		fsyncbench.RandWriteConfig{BS: 8192, FileSize: 4096}.Validate(),
		fsyncbench.RandWriteConfig{FsyncEvery: -1}.Validate(),
		fsyncbench.DirFsyncConfig{Files: 10, Deletes: 11}.Validate(),
		fsyncbench.DirFsyncConfig{Files: -1}.Validate(),
		fsyncbench.CsumFsyncConfig{LargeSize: 1 << 20, SmallSize: 2 << 20}.Validate(),
		fsyncbench.CommittedConfig{RW: "rw"}.Validate(),
		fsyncbench.CommittedConfig{Clients: -1}.Validate(),
	} {
		if err == nil {
			t.Error("an invalid configuration passed")
		}
	}
	for _, err := range []error{
		fsyncbench.RandWriteConfig{}.Validate(), fsyncbench.DirFsyncConfig{}.Validate(),
		fsyncbench.CsumFsyncConfig{}.Validate(), fsyncbench.CommittedConfig{}.Validate(),
	} {
		if err != nil {
			t.Errorf("defaults: %v", err)
		}
	}
}
