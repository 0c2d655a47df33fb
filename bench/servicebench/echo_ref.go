package servicebench

import (
	"fmt"
	"os/exec"
	"slices"
	"time"
)

// EchoProcess is the echo reference in a process of its own, for another
// benchmark that compares its round trips with the echo's (`ustore bench
// meta`): the same echo server and client as this package's cells.
type EchoProcess struct {
	p    *process
	sock string
}

// StartEchoProcess starts cmd (`ustore bench echo-server --socket sock`)
// and waits until it answers on sock.
func StartEchoProcess(cmd *exec.Cmd, sock string) (*EchoProcess, error) {
	p, err := startProcess("the echo server", cmd, echoReady(sock))
	if err != nil {
		return nil, err
	}
	return &EchoProcess{p: p, sock: sock}, nil
}

// PID is the echo process's id, for a report.
func (e *EchoProcess) PID() int { return e.p.pid() }

// Stop ends the echo process (SIGTERM, then a kill).
func (e *EchoProcess) Stop() error { return e.p.stop() }

// RoundTripP50 is the median of n round trips at depth 1 (one connection,
// the caller's goroutine writing the request and reading the response)
// with a request of reqLen bytes and a response of respLen: the floor a
// request of those frame sizes pays between two processes.
func (e *EchoProcess) RoundTripP50(reqLen, respLen, n int) (time.Duration, error) {
	if reqLen < echoHeader || reqLen > echoSizeMax || respLen < 4 || respLen > echoSizeMax || n < 1 {
		return 0, fmt.Errorf("servicebench: echo of %d and %d bytes, %d times", reqLen, respLen, n)
	}
	c, err := dialEcho(e.sock)
	if err != nil {
		return 0, err
	}
	defer c.close()
	req := echoRequest(reqLen, respLen)
	samples := make([]time.Duration, n)
	for i := range samples {
		t0 := time.Now()
		if err := c.call(req); err != nil {
			return 0, err
		}
		samples[i] = time.Since(t0)
	}
	slices.Sort(samples)
	return samples[n/2], nil
}
