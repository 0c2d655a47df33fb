package layout

import (
	"os"
	"path/filepath"
	"testing"
)

// TestFile_WritesInFullOnce: a missing file is written in full (whole
// chunks, no holes), with the pattern; a second call finds it laid out
// and writes nothing.
func TestFile_WritesInFullOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "dev.img")
	phases := 0
	phase := func(string, ...any) { phases++ }
	n, err := File(path, 3*chunkBytes+12345, phase)
	if err != nil {
		t.Skipf("O_DIRECT lay-out unavailable here: %v", err)
	}
	if n != 3*chunkBytes || phases != 1 {
		t.Fatalf("laid out %d bytes in %d phases, want %d in 1", n, phases, 3*chunkBytes)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want := pattern(chunkBytes)
	for off := 0; off < len(got); off += chunkBytes {
		if string(got[off:off+chunkBytes]) != string(want) {
			t.Fatalf("chunk at %d is not the pattern", off)
		}
	}
	if n, err := File(path, 3*chunkBytes, phase); err != nil || n != 3*chunkBytes || phases != 1 {
		t.Fatalf("second call: %d, %v, %d phases; want %d, nil, 1", n, err, phases, 3*chunkBytes)
	}
}
