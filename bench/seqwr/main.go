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
	socket := flag.String("socket", "", "a running ustore server's Unix socket")
	dir := flag.String("dir", "", "a directory of a kernel filesystem, instead of a server")
	files := flag.Int("files", 128, "files, one writer each")
	bs := flag.String("bs", "16k", "bytes per write")
	total := flag.String("total", "1G", "bytes written in all")
	flag.Parse()
	if (*socket == "") == (*dir == "") {
		fail(fmt.Errorf("give one of --socket and --dir"))
	}
	bsN, err := parseSize(*bs)
	if err != nil {
		fail(err)
	}
	totalN, err := parseSize(*total)
	if err != nil {
		fail(err)
	}
	per := totalN / int64(*files) / bsN * bsN
	if per == 0 {
		fail(fmt.Errorf("--total %s over %d files is less than one --bs write each", *total, *files))
	}
	ctx := context.Background()
	var open func(i int) (writeAt func([]byte, int64) error, closeFn func() error, err error)
	var syncAll func() error
	if *socket != "" {
		open = func(i int) (func([]byte, int64) error, func() error, error) {
			c, err := client.Dial(ctx, *socket)
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
		syncAll = func() error {
			c, err := client.Dial(ctx, *socket)
			if err != nil {
				return err
			}
			defer c.Close()
			return c.Sync(ctx)
		}
	} else {
		open = func(i int) (func([]byte, int64) error, func() error, error) {
			f, err := os.Create(filepath.Join(*dir, fmt.Sprintf("seqwr.%d", i)))
			if err != nil {
				return nil, nil, err
			}
			return func(b []byte, off int64) error {
				_, err := f.WriteAt(b, off)
				return err
			}, f.Close, nil
		}
		syncAll = func() error {
			f, err := os.Open(*dir)
			if err != nil {
				return err
			}
			defer f.Close()
			return unix.Syncfs(int(f.Fd()))
		}
	}
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, *files)
	for i := range *files {
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
		fail(err)
	}
	wrote := time.Since(start)
	syncStart := time.Now()
	if err := syncAll(); err != nil {
		fail(err)
	}
	synced := time.Since(syncStart)
	mib := float64(per*int64(*files)) / (1 << 20)
	fmt.Printf("files %d bs %d bytes %d write_s %.3f MiB_s %.1f sync_s %.3f\n",
		*files, bsN, per*int64(*files), wrote.Seconds(), mib/wrote.Seconds(), synced.Seconds())
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

func fail(err error) {
	fmt.Fprintln(os.Stderr, "seqwr:", err)
	os.Exit(1)
}
