package jaegertest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

const (
	// readyTimeout bounds Jaeger's start: 0.1–0.4 s when the machine is
	// idle, far more when every core is compiling.
	readyTimeout = 60 * time.Second
	// stopTimeout bounds SIGTERM before SIGKILL. With self-tracing off
	// Jaeger stops in about 10 ms.
	stopTimeout = 5 * time.Second
	// startAttempts retries a start that lost a port to another process
	// between picking and binding it.
	startAttempts = 3
	// pollInterval paces the readiness and WaitTrace loops.
	pollInterval = 50 * time.Millisecond
)

// Jaeger is a running Jaeger process, listening on 127.0.0.1 only.
type Jaeger struct {
	cmd     *exec.Cmd
	exited  chan struct{} // closed when cmd.Wait returned
	waitErr error         // cmd.Wait's result, read after exited is closed
	logPath string

	otlpHTTP, otlpGRPC string // host:port
	queryHTTP          string // host:port
	client             *http.Client
}

// Start runs Jaeger for the test and stops it when the test ends. It builds
// bin/jaeger first when that is missing or stale (minutes: see the package
// documentation). It fails the test when Jaeger cannot be built or started.
func Start(t testing.TB) *Jaeger {
	t.Helper()
	bin := Binary(t)
	var errs []error
	for range startAttempts {
		j, err := start(bin, t.TempDir())
		if err == nil {
			t.Cleanup(func() {
				if err := j.stop(); err != nil {
					t.Errorf("jaegertest: stop: %v", err)
				}
				if t.Failed() {
					t.Logf("jaegertest: Jaeger's log (%s):\n%s", j.logPath, tail(j.logPath, 4000))
				}
			})
			return j
		}
		errs = append(errs, err)
	}
	t.Fatalf("jaegertest: Jaeger did not start (%d attempts): %v", startAttempts, errors.Join(errs...))
	return nil
}

// OTLPEndpoint is the base URL of Jaeger's OTLP/HTTP receiver,
// "http://127.0.0.1:PORT": what OTEL_EXPORTER_OTLP_ENDPOINT or ustore's
// --otlp-endpoint take ("/v1/traces" is appended by the exporter).
func (j *Jaeger) OTLPEndpoint() string { return "http://" + j.otlpHTTP }

// OTLPGRPCEndpoint is the host:port of Jaeger's OTLP/gRPC receiver.
func (j *Jaeger) OTLPGRPCEndpoint() string { return j.otlpGRPC }

// QueryURL is the base URL of Jaeger's query API and UI.
func (j *Jaeger) QueryURL() string { return "http://" + j.queryHTTP }

func start(bin, dir string) (*Jaeger, error) {
	ports, err := freePorts(5)
	if err != nil {
		return nil, err
	}
	j := &Jaeger{
		exited:    make(chan struct{}),
		logPath:   filepath.Join(dir, "jaeger.log"),
		otlpGRPC:  ports[0],
		otlpHTTP:  ports[1],
		queryHTTP: ports[2],
		client:    &http.Client{Timeout: 10 * time.Second},
	}
	health := ports[4]
	cfgPath := filepath.Join(dir, "jaeger.yaml")
	if err := os.WriteFile(cfgPath, []byte(config(ports[0], ports[1], ports[2], ports[3], health)), 0o644); err != nil {
		return nil, err
	}
	logFile, err := os.Create(j.logPath)
	if err != nil {
		return nil, err
	}
	defer logFile.Close() // the child has its own descriptor
	j.cmd = exec.Command(bin, "--config", "file:"+cfgPath)
	j.cmd.Dir = dir
	j.cmd.Env = withoutOTEL(os.Environ())
	j.cmd.Stdout, j.cmd.Stderr = logFile, logFile
	// Jaeger dies with the test binary, even one killed by -timeout.
	j.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := j.cmd.Start(); err != nil {
		return nil, fmt.Errorf("jaegertest: %w", err)
	}
	go func() {
		j.waitErr = j.cmd.Wait()
		close(j.exited)
	}()
	if err := j.waitReady(health); err != nil {
		_ = j.stop()
		return nil, fmt.Errorf("%w; log:\n%s", err, tail(j.logPath, 2000))
	}
	return j, nil
}

// config is Jaeger's configuration: an OTLP receiver straight into memory
// (no batch processor, so that an exported span can be queried as soon as
// the export returned), the query API, a health check; every endpoint on
// 127.0.0.1; Jaeger's own metrics and tracing off.
func config(otlpGRPC, otlpHTTP, queryHTTP, queryGRPC, health string) string {
	return fmt.Sprintf(`service:
  extensions: [jaeger_storage, jaeger_query, healthcheckv2]
  pipelines:
    traces:
      receivers: [otlp]
      exporters: [jaeger_storage_exporter]
  telemetry:
    resource:
      service.name: jaeger
    metrics:
      level: none
    logs:
      level: warn

extensions:
  jaeger_query:
    storage:
      traces: memstore
    enable_tracing: false
    http:
      endpoint: %[3]s
    grpc:
      endpoint: %[4]s
  jaeger_storage:
    backends:
      memstore:
        memory:
          max_traces: 10000
  healthcheckv2:
    use_v2: true
    http:
      endpoint: %[5]s

receivers:
  otlp:
    protocols:
      grpc:
        endpoint: %[1]s
      http:
        endpoint: %[2]s

exporters:
  jaeger_storage_exporter:
    trace_storage: memstore
`, otlpGRPC, otlpHTTP, queryHTTP, queryGRPC, health)
}

// waitReady polls the health check and the query API until both answer 200.
func (j *Jaeger) waitReady(health string) error {
	deadline := time.Now().Add(readyTimeout)
	urls := []string{"http://" + health + "/status", j.QueryURL() + "/api/v3/services"}
	for {
		ready := true
		for _, u := range urls {
			if !j.ok(u) {
				ready = false
				break
			}
		}
		if ready {
			return nil
		}
		select {
		case <-j.exited:
			return fmt.Errorf("jaegertest: Jaeger exited during start: %v", j.waitErr)
		case <-time.After(pollInterval):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("jaegertest: Jaeger not ready after %v", readyTimeout)
		}
	}
}

func (j *Jaeger) ok(url string) bool {
	resp, err := j.client.Get(url)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// stop sends SIGTERM, then SIGKILL after stopTimeout, and waits for the exit.
func (j *Jaeger) stop() error {
	select {
	case <-j.exited:
		return nil // already gone (a failed start)
	default:
	}
	_ = j.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-j.exited:
		return nil
	case <-time.After(stopTimeout):
	}
	_ = j.cmd.Process.Kill()
	<-j.exited
	return fmt.Errorf("jaegertest: Jaeger ignored SIGTERM for %v and was killed", stopTimeout)
}

// freePorts returns n distinct free ports on 127.0.0.1 as host:port. They
// are held open together, so that they differ, and released for Jaeger to
// take; another process may take one first, which Start's retries cover.
func freePorts(n int) ([]string, error) {
	var lns []net.Listener
	defer func() {
		for _, ln := range lns {
			ln.Close()
		}
	}()
	addrs := make([]string, 0, n)
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("jaegertest: free port: %w", err)
		}
		lns = append(lns, ln)
		addrs = append(addrs, ln.Addr().String())
	}
	return addrs, nil
}

// withoutOTEL drops OTEL_* variables: the test's own exporter settings are
// not Jaeger's.
func withoutOTEL(env []string) []string {
	out := env[:0:0]
	for _, kv := range env {
		if !strings.HasPrefix(kv, "OTEL_") {
			out = append(out, kv)
		}
	}
	return out
}

// tail returns at most the last n bytes of the file at path.
func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(%v)", err)
	}
	if len(b) > n {
		b = b[len(b)-n:]
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			b = b[i+1:]
		}
	}
	return string(b)
}

// get fetches url into a byte slice; a status other than 200 is an error
// carrying the status code (see errStatus).
func (j *Jaeger) get(ctx context.Context, url string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := j.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("jaegertest: %w", err)
	}
	defer resp.Body.Close()
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(resp.Body); err != nil {
		return nil, fmt.Errorf("jaegertest: GET %s: %w", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, &errStatus{url: url, code: resp.StatusCode, body: buf.String()}
	}
	return buf.Bytes(), nil
}

type errStatus struct {
	url  string
	code int
	body string
}

func (e *errStatus) Error() string {
	body := e.body
	if len(body) > 300 {
		body = body[:300] + "..."
	}
	return fmt.Sprintf("jaegertest: GET %s: %d %s: %s", e.url, e.code, http.StatusText(e.code), body)
}
