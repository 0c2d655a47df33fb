package ringbench

import (
	"fmt"
	"time"

	"ustore/ring"
)

// Config is one benchmark invocation: every (RW, QD) pair is one run.
type Config struct {
	File     string
	Size     int64 // bytes of the file the offsets cover
	BS       int   // block size, a multiple of 4096 with Direct
	QDs      []int
	RWs      []string // randread, randwrite, read, write
	Duration time.Duration
	Direct   bool
	Engine   string    // ring, ring-async, ring-sync, pread
	Fixed    bool      // use the ring's registered buffers (ring engines)
	NoDirect bool      // ring-sync: never take the ring's direct path
	RingMode ring.Mode // setup flags of the ring engines (ring.ModeAuto)
	// SubmitBatch caps the SQEs per io_uring_enter (ring.Config.SubmitBatchMax;
	// 0: the ring's default, negative: no cap).
	SubmitBatch int
	// Progress, when set, is called about once a second during a run.
	Progress func(p Progress)
}

// Progress is a run's state while it runs.
type Progress struct {
	RW       string
	QD       int
	Elapsed  time.Duration
	Duration time.Duration
	Ops      uint64
}

// Result is one run's figures.
type Result struct {
	Engine      string  `json:"engine"`
	RW          string  `json:"rw"`
	QD          int     `json:"qd"`
	BS          int     `json:"bs"`
	Ops         uint64  `json:"ops"`
	Seconds     float64 `json:"seconds"`
	IOPS        float64 `json:"iops"`
	MBps        float64 `json:"mb_per_s"`
	MeanUS      float64 `json:"lat_mean_us"`
	P50US       float64 `json:"lat_p50_us"`
	P99US       float64 `json:"lat_p99_us"`
	P999US      float64 `json:"lat_p999_us"`
	OpsPerEnter float64 `json:"ops_per_enter,omitempty"`
	DirectOps   uint64  `json:"direct_ops,omitempty"`
	// Handoffs to the ring's goroutine: eventfd writes to wake it from the
	// kernel, and wakes from its idle park.
	KernelWakes uint64 `json:"kernel_wakes,omitempty"`
	Parks       uint64 `json:"parks,omitempty"`
}

// Engines lists the accepted Config.Engine values.
var Engines = []string{"ring", "ring-async", "ring-sync", "pread"}

func (c *Config) validate() error {
	switch {
	case c.File == "":
		return fmt.Errorf("ringbench: no file")
	case c.BS <= 0 || (c.Direct && c.BS%4096 != 0):
		return fmt.Errorf("ringbench: block size %d: must be a positive multiple of 4096 with O_DIRECT", c.BS)
	case c.Size < int64(c.BS):
		return fmt.Errorf("ringbench: size %d smaller than one block", c.Size)
	case c.Duration <= 0:
		return fmt.Errorf("ringbench: duration must be positive")
	case len(c.QDs) == 0 || len(c.RWs) == 0:
		return fmt.Errorf("ringbench: need at least one queue depth and one rw mode")
	}
	for _, qd := range c.QDs {
		if qd < 1 || qd > 4096 {
			return fmt.Errorf("ringbench: queue depth %d: must be 1..4096", qd)
		}
	}
	for _, rw := range c.RWs {
		switch rw {
		case "randread", "randwrite", "read", "write":
		default:
			return fmt.Errorf("ringbench: rw %q: want randread, randwrite, read or write", rw)
		}
	}
	for _, e := range Engines {
		if e == c.Engine {
			return nil
		}
	}
	return fmt.Errorf("ringbench: engine %q: want one of %v", c.Engine, Engines)
}
