//go:build !(linux && amd64)

package ebpf

// Probes is empty here: Attach always fails with ErrUnsupported.
type Probes struct{}

// Attach returns ErrUnsupported: the BPF programs read the amd64 ABI0
// markers' stack, which only linux/amd64 builds have.
func Attach(Config) (*Probes, error) { return nil, ErrUnsupported }

func (p *Probes) Attached() []string                      { return nil }
func (p *Probes) Failed() map[string]error                { return nil }
func (p *Probes) Summary() string                         { return ErrUnsupported.Error() }
func (p *Probes) Close() error                            { return nil }
func (p *Probes) LockWaits() (map[uint32]Hist, error)     { return nil, ErrUnsupported }
func (p *Probes) Phases() (map[uint32]Hist, error)        { return nil, ErrUnsupported }
func (p *Probes) UringOps() (map[uint32]Hist, error)      { return nil, ErrUnsupported }
func (p *Probes) KernelLocks() (map[uint32]Hist, error)   { return nil, ErrUnsupported }
func (p *Probes) ReactorOffCPU() (map[uint32]Hist, error) { return nil, ErrUnsupported }
func (p *Probes) InflightWaits() (int, error)             { return 0, ErrUnsupported }
func (p *Probes) Stats() (Stats, error)                   { return Stats{}, ErrUnsupported }
