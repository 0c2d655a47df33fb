package servicebench

import (
	"errors"
	"fmt"
	"log/slog"
	"os/exec"
	"slices"
	"time"

	"ustore/dev/devopen"
	"ustore/proto"
)

// Ops lists the ops, in the order they run: writes last, so that the
// device's work after them (the host's too) does not slow the reads.
var Ops = []string{"read", "stat", "write"}

// Systems lists the systems, in the order they run within a cell.
var Systems = []string{"service", "store", "echo"}

// Config is one benchmark invocation.
type Config struct {
	// Socket is an external server's socket to drive; "" starts a server
	// on File (or a memdev) for the run. With Socket, the store system is
	// skipped (there is no store in this process).
	Socket string
	// File is the device file of the server the run starts: laid out
	// (written in full) to Size, then formatted. Its contents are lost.
	File string
	// InProcess runs the run's server in this process, as a server.Server
	// on a store.Store (the store reference needs it); otherwise the run
	// starts it as a process of its own (ServerProcess) on File, as users
	// run `ustore serve`.
	InProcess bool
	// ServerProcess returns the command that serves the formatted device
	// file at socket (`ustore serve --device device --socket socket`).
	// Needed unless Socket, InProcess or Memdev.
	ServerProcess func(device, socket string) *exec.Cmd
	// EchoProcess returns the command that serves the echo reference on
	// socket in a process of its own (`ustore bench echo-server`); nil runs
	// it in this process.
	EchoProcess func(socket string) *exec.Cmd
	// Memdev runs the server on an in-memory device of Size bytes instead
	// of File, in this process (as InProcess).
	Memdev  bool
	Size    int64
	Backend devopen.Backend // of File; default auto

	Ops     []string // default Ops
	Systems []string // default Systems
	Clients []int    // connections per cell; default 1, 8, 64
	Depths  []int    // requests in flight per connection; default 1, 16

	Duration time.Duration // measured time per cell
	Warmup   time.Duration // untimed, before each cell; default min(Duration/10, 200ms)
	BS       int           // bytes per write and read (default 4096)
	FileSize int64         // each client's file (default 4 MiB)
	Seed     uint64

	Logger *slog.Logger // the store's and server's; default: warnings to stderr
	// Progress, if set, is called about five times a second while a cell
	// runs, and once when it ends.
	Progress func(Progress)
	// Phase, if set, is told each setup step.
	Phase func(string)
}

// Progress is where a run is.
type Progress struct {
	Cell, Cells int // this cell's number (from 1) and how many there are
	System, Op  string
	Clients     int
	Depth       int
	Elapsed     time.Duration // of the measured window
	Duration    time.Duration
	Ops         int64 // so far in the measured window
}

// withDefaults fills the zero values.
func (c Config) withDefaults() Config {
	if len(c.Ops) == 0 {
		c.Ops = Ops
	}
	if len(c.Systems) == 0 {
		c.Systems = Systems
	}
	if len(c.Clients) == 0 {
		c.Clients = []int{1, 8, 64}
	}
	if len(c.Depths) == 0 {
		c.Depths = []int{1, 16}
	}
	if c.Duration == 0 {
		c.Duration = 2 * time.Second
	}
	if c.Warmup == 0 {
		c.Warmup = min(c.Duration/10, 200*time.Millisecond)
	}
	if c.BS == 0 {
		c.BS = 4096
	}
	if c.FileSize == 0 {
		c.FileSize = 4 << 20
	}
	if c.Backend == "" {
		c.Backend = devopen.Auto
	}
	return c
}

// Validate checks the configuration (after its defaults).
func (c Config) Validate() error {
	c = c.withDefaults()
	for _, op := range c.Ops {
		if !slices.Contains(Ops, op) {
			return fmt.Errorf("op %q: want one of %v", op, Ops)
		}
	}
	for _, s := range c.Systems {
		if !slices.Contains(Systems, s) {
			return fmt.Errorf("system %q: want one of %v", s, Systems)
		}
	}
	for _, n := range c.Clients {
		if n < 1 || n > 1024 {
			return fmt.Errorf("clients %d: want 1 to 1024 (the server's connection bound)", n)
		}
	}
	for _, d := range c.Depths {
		if d < 1 || d > proto.InflightMax {
			return fmt.Errorf("depth %d: want 1 to %d (the protocol's in-flight bound)", d, proto.InflightMax)
		}
	}
	if c.Duration < 0 || c.Warmup < 0 {
		return errors.New("duration and warmup must not be negative")
	}
	if c.BS < 1 || c.BS > proto.IOSizeMax {
		return fmt.Errorf("bs %d: want 1 to %d", c.BS, proto.IOSizeMax)
	}
	if c.FileSize < int64(c.BS) {
		return fmt.Errorf("file size %d: want at least bs (%d)", c.FileSize, c.BS)
	}
	if c.Socket == "" {
		if !c.Memdev && c.File == "" {
			return errors.New("no device: give a file, a memdev or an external server's socket")
		}
		if !c.Memdev && !c.InProcess && c.ServerProcess == nil {
			return errNoProcess
		}
		// Every client's file, with room for the metadata and what
		// writeback puts beside the old extents until a commit.
		need := 2*c.FileSize*int64(slices.Max(c.Clients)) + 64<<20
		if c.Size < need {
			return fmt.Errorf("device size %d: want at least %d for %d files of %d bytes", c.Size, need, slices.Max(c.Clients), c.FileSize)
		}
	}
	return nil
}
