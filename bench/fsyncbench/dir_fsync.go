package fsyncbench

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// DirFsyncConfig configures dir-fsync. Zero values mean the defaults, the
// patch's test.
type DirFsyncConfig struct {
	Files int // empty files created in the directory (default 1,000,000)
	// Deletes is how many of them are deleted before the second fsync:
	// file_1, then every (Files/Deletes)th (default 1000), as the patch's
	// script.
	Deletes int
	Options
}

func (c DirFsyncConfig) withDefaults() DirFsyncConfig {
	if c.Files == 0 {
		c.Files = 1_000_000
	}
	if c.Deletes == 0 {
		c.Deletes = 1000
	}
	return c
}

// Validate checks the configuration (after its defaults).
func (c DirFsyncConfig) Validate() error {
	c = c.withDefaults()
	if c.Files < 1 || c.Files > filesMax {
		return fmt.Errorf("files %d: want 1 to %d", c.Files, filesMax)
	}
	if c.Deletes < 1 || c.Deletes > c.Files {
		return fmt.Errorf("deletes %d: want 1 to files (%d)", c.Deletes, c.Files)
	}
	return nil
}

// DirFsyncResult is dir-fsync's figures. Times are in ms.
type DirFsyncResult struct {
	Workload string `json:"workload"` // "dir-fsync"
	Target   string `json:"target"`
	Files    int    `json:"files"`
	Deleted  int    `json:"deleted"`
	// CreateMS is the time to create the files (one at a time, as the
	// patch's loop of open and close).
	CreateMS float64 `json:"create_ms"`
	// FsyncAfterCreateMS is the directory's fsync right after the
	// creates: every new name must become durable.
	FsyncAfterCreateMS float64 `json:"fsync_after_create_ms"`
	SyncMS             float64 `json:"sync_ms"`
	DeleteMS           float64 `json:"delete_ms"`
	// FsyncAfterDeleteMS is the directory's fsync after the deletes: the
	// removed names must become durable, and the cost should follow the
	// 1000 changes, not the million entries.
	FsyncAfterDeleteMS float64 `json:"fsync_after_delete_ms"`
	// Counters is what moved on the server in each timed step ("create",
	// "fsync_after_create", "sync", "delete", "fsync_after_delete").
	Counters map[string]Counters `json:"counters,omitempty"`
}

// DirFsync runs dir-fsync on t: create Files empty files in a new
// directory, fsync the directory, sync, delete every (Files/Deletes)th
// file, fsync the directory again — each step timed.
func DirFsync(ctx context.Context, t Target, cfg DirFsyncConfig) (res DirFsyncResult, err error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return res, err
	}
	res = DirFsyncResult{Workload: "dir-fsync", Target: t.Name(), Files: cfg.Files}
	c, err := t.Connect(ctx)
	if err != nil {
		return res, err
	}
	defer func() { err = errors.Join(err, c.Close()) }()
	dir := runDir("dir-fsync")
	if err := c.Mkdir(dir); err != nil {
		return res, err
	}
	name := func(i int) string { return dir + "/file_" + strconv.Itoa(i) }

	// step times fn and records what moved on the server meanwhile.
	step := func(key string, ms *float64, fn func() error) error {
		before, err := counters(ctx, t)
		if err != nil {
			return err
		}
		t0 := time.Now()
		if err := fn(); err != nil {
			return fmt.Errorf("dir-fsync, %s: %w", key, err)
		}
		*ms = float64(time.Since(t0)) / 1e6
		after, err := counters(ctx, t)
		if err != nil {
			return err
		}
		if d := after.Sub(before); d != nil {
			if res.Counters == nil {
				res.Counters = map[string]Counters{}
			}
			res.Counters[key] = d
		}
		return nil
	}

	cfg.phase("creating %d files in %s", cfg.Files, dir)
	createStart := time.Now()
	err = step("create", &res.CreateMS, func() error {
		for i := 1; i <= cfg.Files; i++ {
			f, err := c.Create(name(i))
			if err != nil {
				return err
			}
			if err := f.Close(); err != nil {
				return err
			}
			if cfg.Progress != nil && i%10000 == 0 {
				cfg.Progress(Progress{Workload: res.Workload, Case: "create", Ops: int64(i), OpsTotal: int64(cfg.Files),
					Elapsed: time.Since(createStart), Window: 1, Windows: 1})
			}
		}
		return nil
	})
	if err != nil {
		return res, err
	}
	cfg.phase("fsync of the directory, sync")
	if err := step("fsync_after_create", &res.FsyncAfterCreateMS, func() error { return c.FsyncDir(dir) }); err != nil {
		return res, err
	}
	if err := step("sync", &res.SyncMS, c.Sync); err != nil {
		return res, err
	}
	every := cfg.Files / cfg.Deletes
	cfg.phase("deleting file_1 and every %dth file after it, fsync of the directory", every)
	deleted := map[int]bool{}
	err = step("delete", &res.DeleteMS, func() error {
		for i := 1; i <= cfg.Files && len(deleted) < cfg.Deletes; i += every {
			if err := c.Unlink(name(i)); err != nil {
				return err
			}
			deleted[i] = true
		}
		return nil
	})
	if err != nil {
		return res, err
	}
	res.Deleted = len(deleted)
	if err := step("fsync_after_delete", &res.FsyncAfterDeleteMS, func() error { return c.FsyncDir(dir) }); err != nil {
		return res, err
	}
	if cfg.Keep {
		return res, nil
	}
	cfg.phase("removing the %d files left", cfg.Files-len(deleted))
	for i := 1; i <= cfg.Files; i++ {
		if !deleted[i] {
			if err := c.Unlink(name(i)); err != nil {
				return res, err
			}
		}
	}
	return res, c.Rmdir(dir)
}
