// Command seqwr is the workload of the 2013 btrfs patch "fix very slow
// inode eviction and fs unmount" (sysbench fileio --file-test-mode=seqwr
// --file-num=128 --num-threads=128 --file-block-size=16384): --files
// files, one writer each, writing its file from the start in --bs
// sequential writes until the files hold --total bytes together; then a
// sync. It runs against a ustore server (--socket, one connection per
// writer) or a directory of a kernel filesystem (--dir, pwrite and
// syncfs), and prints the write and sync times. bench/unmount.sh runs it
// before timing the unmount.
//
//	go run ./bench/seqwr --socket ustore-data/ustore.sock --total 1G
//	go run ./bench/seqwr --dir /mnt/ext4 --total 1G
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"ustore/client"
)

func main() {
	var cfg config
	flag.StringVar(&cfg.socket, "socket", "", "a running ustore server's Unix socket")
	flag.StringVar(&cfg.dir, "dir", "", "a directory of a kernel filesystem, instead of a server")
	flag.IntVar(&cfg.files, "files", 128, "files, one writer each")
	flag.StringVar(&cfg.bs, "bs", "16k", "bytes per write")
	flag.StringVar(&cfg.total, "total", "1G", "bytes written in all")
	flag.Parse()
	r, err := run(context.Background(), cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "seqwr:", err)
		os.Exit(1)
	}
	fmt.Println(r)
}

type config struct {
	socket, dir string
	files       int
	bs, total   string
}

// result is what a run did; String is the line bench/unmount.sh records.
type result struct {
	files          int
	bs, bytes      int64
	write, syncDur time.Duration
}

func (r result) String() string {
	mib := float64(r.bytes) / (1 << 20)
	return fmt.Sprintf("files %d bs %d bytes %d write_s %.3f MiB_s %.1f sync_s %.3f",
		r.files, r.bs, r.bytes, r.write.Seconds(), mib/r.write.Seconds(), r.syncDur.Seconds())
}

// run writes cfg.files files of cfg.total/cfg.files bytes (whole writes of
// cfg.bs), one writer each, then syncs.
func run(ctx context.Context, cfg config) (result, error) {
	if (cfg.socket == "") == (cfg.dir == "") {
		return result{}, fmt.Errorf("give one of --socket and --dir")
	}
	bsN, err := parseSize(cfg.bs)
	if err != nil {
		return result{}, err
	}
	totalN, err := parseSize(cfg.total)
	if err != nil {
		return result{}, err
	}
	if cfg.files <= 0 {
		return result{}, fmt.Errorf("--files %d: want at least 1", cfg.files)
	}
	per := totalN / int64(cfg.files) / bsN * bsN
	if per == 0 {
		return result{}, fmt.Errorf("--total %s over %d files is less than one --bs write each", cfg.total, cfg.files)
	}
	open, syncAll := dirTarget(cfg.dir)
	if cfg.socket != "" {
		open, syncAll = serverTarget(ctx, cfg.socket)
	}
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, cfg.files)
	for i := range cfg.files {
		wg.Add(1)
		go func() {
			defer wg.Done()
			writeAt, closeFn, err := open(i)
			if err != nil {
				errs <- err
				return
			}
			defer closeFn()
			buf := make([]byte, bsN)
			for j := range buf {
				buf[j] = byte(i + j)
			}
			for off := int64(0); off < per; off += bsN {
				if err := writeAt(buf, off); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		return result{}, err
	}
	r := result{files: cfg.files, bs: bsN, bytes: per * int64(cfg.files), write: time.Since(start)}
	syncStart := time.Now()
	if err := syncAll(); err != nil {
		return result{}, err
	}
	r.syncDur = time.Since(syncStart)
	return r, nil
}

// opener opens writer i's file: its positioned write and its close.
type opener func(i int) (writeAt func([]byte, int64) error, closeFn func() error, err error)

// serverTarget writes through the client, one connection per writer, and
// syncs with a Sync request.
func serverTarget(ctx context.Context, socket string) (opener, func() error) {
	open := func(i int) (func([]byte, int64) error, func() error, error) {
		c, err := client.Dial(ctx, socket)
		if err != nil {
			return nil, nil, err
		}
		a, err := c.Create(ctx, client.RootIno, fmt.Sprintf("seqwr.%d", i), 0o644)
		if err != nil {
			c.Close()
			return nil, nil, err
		}
		return func(b []byte, off int64) error {
			_, err := c.Write(ctx, a.Ino, uint64(off), b)
			return err
		}, c.Close, nil
	}
	syncAll := func() error {
		c, err := client.Dial(ctx, socket)
		if err != nil {
			return err
		}
		defer c.Close()
		return c.Sync(ctx)
	}
	return open, syncAll
}

// dirTarget writes files in dir with pwrite and syncs its filesystem.
func dirTarget(dir string) (opener, func() error) {
	open := func(i int) (func([]byte, int64) error, func() error, error) {
		f, err := os.Create(filepath.Join(dir, fmt.Sprintf("seqwr.%d", i)))
		if err != nil {
			return nil, nil, err
		}
		return func(b []byte, off int64) error {
			_, err := f.WriteAt(b, off)
			return err
		}, f.Close, nil
	}
	syncAll := func() error {
		f, err := os.Open(dir)
		if err != nil {
			return err
		}
		defer f.Close()
		return unix.Syncfs(int(f.Fd()))
	}
	return open, syncAll
}

// parseSize reads 16k, 1G, 512M or a plain byte count.
func parseSize(s string) (int64, error) {
	mult := int64(1)
	switch {
	case strings.HasSuffix(s, "k"), strings.HasSuffix(s, "K"):
		mult, s = 1<<10, s[:len(s)-1]
	case strings.HasSuffix(s, "M"):
		mult, s = 1<<20, s[:len(s)-1]
	case strings.HasSuffix(s, "G"):
		mult, s = 1<<30, s[:len(s)-1]
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("size %q: want a positive count with an optional k, M or G", s)
	}
	return n * mult, nil
}
