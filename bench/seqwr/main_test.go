package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRun_Dir_WritesEveryFile: on a directory, each writer's file holds
// its share of the total in whole --bs writes of its own pattern, and the
// summary line says so.
func TestRun_Dir_WritesEveryFile(t *testing.T) {
	dir := t.TempDir()
	r, err := run(context.Background(), config{dir: dir, files: 4, bs: "16k", total: "200k"})
	if err != nil {
		t.Fatal(err)
	}
	// 200 KiB over 4 files is 50 KiB each: three whole 16 KiB writes.
	const per = 3 * 16 << 10
	if r.bytes != 4*per || r.bs != 16<<10 || r.files != 4 {
		t.Fatalf("result %+v, want 4 files of %d bytes", r, per)
	}
	for i := range 4 {
		b, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("seqwr.%d", i)))
		if err != nil {
			t.Fatal(err)
		}
		want := make([]byte, 16<<10)
		for j := range want {
			want[j] = byte(i + j)
		}
		if len(b) != per || !bytes.Equal(b[:16<<10], want) || !bytes.Equal(b[per-16<<10:], want) {
			t.Fatalf("file %d: %d bytes, pattern %v", i, len(b), bytes.Equal(b[:16<<10], want))
		}
	}
	if s := r.String(); !strings.HasPrefix(s, "files 4 bs 16384 bytes 196608 write_s ") || !strings.Contains(s, " sync_s ") {
		t.Fatalf("summary %q", s)
	}
}

// TestRun_Config_Refused: one target, and sizes that make at least one
// write per file.
func TestRun_Config_Refused(t *testing.T) {
	for _, cfg := range []config{
		{files: 1, bs: "16k", total: "1M"},
		{socket: "s", dir: "d", files: 1, bs: "16k", total: "1M"},
		{dir: "d", files: 4, bs: "16k", total: "32k"},
		{dir: "d", files: 1, bs: "x", total: "1M"},
		{dir: "d", files: 0, bs: "16k", total: "1M"},
	} {
		if _, err := run(context.Background(), cfg); err == nil {
			t.Errorf("%+v: no error", cfg)
		}
	}
}
