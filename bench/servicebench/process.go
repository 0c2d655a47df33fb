package servicebench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// A process of the run's own: the ustore server, as users run it (`ustore
// serve`, its own process), and the echo reference beside it, so that both
// pay what a request between two processes pays — each hand-off between
// goroutines may wake a sleeping thread in the other process, which
// within one process the Go scheduler's spinning threads absorb (issue 15:
// a stat measured 12 µs with the server in the benchmark's process and
// 50 µs against `ustore serve`).

// processReadyMax bounds the wait for a started process's socket to
// answer.
const processReadyMax = 60 * time.Second

// processStopMax bounds a process's graceful exit after SIGTERM; then it
// is killed.
const processStopMax = 30 * time.Second

// process is a started server or echo process.
type process struct {
	name   string
	cmd    *exec.Cmd
	stderr syncBuffer
	exited chan struct{}
	err    error // the Wait's, once exited is closed
}

// startProcess starts cmd and waits until ready (a dial of its socket)
// succeeds, the process exits, or processReadyMax passes.
func startProcess(name string, cmd *exec.Cmd, ready func() error) (*process, error) {
	p := &process{name: name, cmd: cmd, exited: make(chan struct{})}
	cmd.Stdout = &p.stderr
	cmd.Stderr = &p.stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	go func() {
		p.err = cmd.Wait()
		close(p.exited)
	}()
	deadline := time.Now().Add(processReadyMax)
	for {
		err := ready()
		if err == nil {
			return p, nil
		}
		select {
		case <-p.exited:
			return nil, fmt.Errorf("%s exited before it served: %v\n%s", name, p.err, p.stderr.String())
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			p.stop()
			return nil, fmt.Errorf("%s did not serve within %v: %v\n%s", name, processReadyMax, err, p.stderr.String())
		}
	}
}

// pid is the process's id, for the report.
func (p *process) pid() int { return p.cmd.Process.Pid }

// stop sends SIGTERM and waits for the exit, killing the process after
// processStopMax. An exit other than 0 after SIGTERM is an error.
func (p *process) stop() error {
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(processStopMax):
		p.cmd.Process.Kill()
		<-p.exited
		return fmt.Errorf("%s did not exit within %v of SIGTERM; killed\n%s", p.name, processStopMax, p.stderr.String())
	}
	if p.err != nil {
		return fmt.Errorf("%s: %v\n%s", p.name, p.err, p.stderr.String())
	}
	return nil
}

// syncBuffer is a process's output, written by exec's copier goroutine.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// ServeEcho serves the echo reference on a Unix socket at path until ctx
// ends: what the echo process (`ustore bench echo-server`) runs.
func ServeEcho(ctx context.Context, path string) error {
	e, err := startEcho(path)
	if err != nil {
		return err
	}
	<-ctx.Done()
	e.close()
	return nil
}

// echoReady dials the echo server at path once.
func echoReady(path string) func() error {
	return func() error {
		e, err := dialEcho(path)
		if err != nil {
			return err
		}
		e.close()
		return nil
	}
}

// errNoProcess: a run that starts its server as a process was given no
// command for it.
var errNoProcess = errors.New("no command to start the server process: set ServerProcess, or InProcess")
