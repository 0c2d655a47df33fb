package main

// The client commands' common ground: where the server is (--socket,
// $USTORE_SOCKET), how long to wait (--timeout), connecting, paths, and
// errors as one readable line.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"path"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"ustore/client"
	"ustore/proto"
)

// socketEnv names the environment variable that overrides the default
// socket.
const socketEnv = "USTORE_SOCKET"

// dialTimeout bounds connecting and the handshake, whatever --timeout is.
const dialTimeout = 10 * time.Second

// newClientCommands returns the client commands, for the root.
func newClientCommands() []*cobra.Command {
	return []*cobra.Command{
		newPutCommand(), newGetCommand(), newCatCommand(), newWriteCommand(), newReadCommand(),
		newLsCommand(), newStatCommand(), newMkdirCommand(), newRmCommand(), newMvCommand(),
		newTruncateCommand(), newFallocateCommand(), newFsyncCommand(), newSyncCommand(), newDfCommand(),
		newLnCommand(), newReadlinkCommand(), newXattrCommand(),
	}
}

// clientLong is the part of every client command's help about the server.
const clientLong = `

The server is found at --socket: by default $USTORE_SOCKET, else
ustore-data/ustore.sock (where 'ustore serve' puts it). Paths are absolute
within the store ("a/b" is "/a/b"). Exit codes: 0 success, 1 the operation
failed (one line on stderr says why), 2 bad flags or arguments. With
$OTEL_EXPORTER_OTLP_ENDPOINT set (host:port or a URL), the command and its
requests are one trace, of service ustore-cli (docs/TRACING.md).`

// clientFlags are what every client command takes: where the server is,
// and how long the whole command may take.
type clientFlags struct {
	socket  string
	timeout time.Duration
}

func (f *clientFlags) add(c *cobra.Command) {
	f.addSocket(c)
	c.Flags().DurationVar(&f.timeout, "timeout", 0, "give up after this long, e.g. 30s (0: no limit; connecting alone gives up after 10s)")
}

// addSocket adds --socket alone (ustore mount has no --timeout).
func (f *clientFlags) addSocket(c *cobra.Command) {
	c.Flags().StringVar(&f.socket, "socket", defaultClientSocket(), "the server's Unix socket ($"+socketEnv+" overrides the default)")
}

// defaultClientSocket is --socket's default: $USTORE_SOCKET, else the
// socket of the default data file.
func defaultClientSocket() string {
	if def := os.Getenv(socketEnv); def != "" {
		return def
	}
	return defaultSocket(defaultDevice)
}

// session is one client command's connection and context.
type session struct {
	ctx     context.Context
	c       *client.Client
	flags   *clientFlags
	cancels []context.CancelFunc
}

// connect dials the server. The context ends with --timeout, or at SIGINT
// or SIGTERM (so that a put interrupted removes its temporary file).
func (f *clientFlags) connect(ctx context.Context) (*session, error) {
	s := &session{flags: f}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	s.cancels = append(s.cancels, stop)
	if f.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, f.timeout)
		s.cancels = append(s.cancels, cancel)
	}
	s.ctx = ctx
	dctx, cancel := context.WithTimeout(ctx, dialTimeout)
	defer cancel()
	c, err := client.Dial(dctx, f.socket)
	if err != nil {
		s.close()
		return nil, s.flags.connectError(err)
	}
	s.c = c
	return s, nil
}

// run is every client verb's preamble: connect, run fn with the session,
// close. A verb parses its arguments before it calls run, so that a usage
// error (exit 2) needs no server. When tracing is configured, the whole
// command is one trace (startCommandTrace).
func (f *clientFlags) run(cmd *cobra.Command, fn func(s *session) error) (err error) {
	ctx, end := startCommandTrace(cmd)
	defer func() { end(err) }()
	s, err := f.connect(ctx)
	if err != nil {
		return err
	}
	defer s.close()
	return fn(s)
}

// runAt is run on what the path p names: connected, it resolves p (op's
// error if it cannot) and runs fn with p's attributes.
func (f *clientFlags) runAt(cmd *cobra.Command, op, p string, fn func(s *session, a proto.Attr) error) error {
	return f.run(cmd, func(s *session) error {
		a, err := s.resolve(op, p)
		if err != nil {
			return err
		}
		return fn(s, a)
	})
}

// runAtFile is runAt for a verb on file data: a directory at p is op's
// EISDIR.
func (f *clientFlags) runAtFile(cmd *cobra.Command, op, p string, fn func(s *session, a proto.Attr) error) error {
	return f.runAt(cmd, op, p, func(s *session, a proto.Attr) error {
		if a.IsDir() {
			return s.fail(op, p, syscall.EISDIR)
		}
		return fn(s, a)
	})
}

func (s *session) close() {
	if s.c != nil {
		s.c.Close()
	}
	for i := len(s.cancels) - 1; i >= 0; i-- {
		s.cancels[i]()
	}
}

// connectError says which socket was tried, why it failed, and what to do.
// It unwraps to the cause.
func (f *clientFlags) connectError(err error) error {
	sock := f.socket
	const hint = " (is the server running? start it with 'ustore serve', or point --socket or $" + socketEnv + " at its socket)"
	msg := func(format string, args ...any) error {
		return &causeError{msg: "connect to " + sock + ": " + fmt.Sprintf(format, args...), err: err}
	}
	var se *proto.StatusError
	var en syscall.Errno
	switch {
	case errors.As(err, &se) && se.Status == proto.StatusAccess:
		return msg("the server refused this user (its allow-list is 'ustore serve --allow-uid/--allow-gid')")
	case errors.Is(err, syscall.EACCES):
		return msg("permission denied (the socket's mode and group are 'ustore serve --socket-mode/--socket-group')")
	case errors.Is(err, context.DeadlineExceeded):
		wait := dialTimeout
		if t := f.timeout; t > 0 && t < wait {
			wait = t
		}
		return msg("no answer within %v%s", wait, hint)
	case errors.Is(err, context.Canceled):
		return msg("interrupted")
	case errors.As(err, &en):
		if what := notSocket(sock); what != "" {
			// connect(2) says ECONNREFUSED for any file but a socket.
			return msg("%s, not a socket (point --socket or $%s at the server's socket: 'ustore serve --socket')", what, socketEnv)
		}
		return msg("%v%s", en, hint)
	}
	return msg("%v", err)
}

// notSocket says what the file at p is when it exists and is no socket
// ("is a directory"), else "".
func notSocket(p string) string {
	fi, err := os.Stat(p)
	switch {
	case err != nil || fi.Mode()&fs.ModeSocket != 0:
		return ""
	case fi.IsDir():
		return "is a directory"
	case fi.Mode().IsRegular():
		return "is a regular file"
	}
	return "is a device or a pipe"
}

// causeError is a message of its own over the error it explains.
type causeError struct {
	msg string
	err error
}

func (e *causeError) Error() string { return e.msg }
func (e *causeError) Unwrap() error { return e.err }

// opError is a failed operation on a path, printed as "op path: reason".
// It unwraps to the cause: errors.Is(err, fs.ErrNotExist) holds.
type opError struct {
	op, path string
	err      error
	timeout  time.Duration // the command's --timeout, to name it
	hint     string        // what to do instead, if anything
}

func (e *opError) Error() string {
	s := e.op + " " + e.path + ": " + e.reason()
	if e.hint != "" {
		s += " (" + e.hint + ")"
	}
	return s
}

func (e *opError) Unwrap() error { return e.err }

// reason is the cause in words: the errno's text for a failed request
// (with the server's message where the errno alone says little).
func (e *opError) reason() string {
	var se *proto.StatusError
	switch {
	case errors.As(e.err, &se):
		text := se.Status.Errno().Error()
		switch se.Status {
		case proto.StatusIO, proto.StatusInvalid, proto.StatusBadMessage, proto.StatusNoSys:
			if se.Message != "" {
				text += " (" + se.Message + ")"
			}
		}
		return text
	case errors.Is(e.err, context.DeadlineExceeded):
		if e.timeout > 0 {
			return fmt.Sprintf("timed out after %v (--timeout)", e.timeout)
		}
		return "timed out"
	case errors.Is(e.err, context.Canceled):
		return "interrupted"
	case errors.Is(e.err, client.ErrConnection):
		return "lost the connection to the server: " + strings.TrimPrefix(e.err.Error(), client.ErrConnection.Error()+": ")
	}
	var en syscall.Errno
	if errors.As(e.err, &en) {
		return en.Error()
	}
	return e.err.Error()
}

// fail wraps err (nil stays nil) as op on p.
func (s *session) fail(op, p string, err error) error {
	if err == nil {
		return nil
	}
	var oe *opError
	if errors.As(err, &oe) {
		return err
	}
	return &opError{op: op, path: p, err: err, timeout: s.flags.timeout}
}

// failStore is a failed request on the whole store (sync, df), printed as
// "op: reason".
func (s *session) failStore(op string, err error) error {
	return fmt.Errorf("%s: %s", op, (&opError{err: err, timeout: s.flags.timeout}).reason())
}

// storePath makes a command-line path absolute and clean: "a//b/" is "/a/b".
func storePath(p string) string {
	return path.Clean("/" + p)
}

// resolve returns the attributes at p, or op's error.
func (s *session) resolve(op, p string) (proto.Attr, error) {
	a, err := s.c.Resolve(s.ctx, p)
	return a, s.fail(op, p, err)
}

// parent resolves the directory holding p (clean and absolute) and returns
// it with p's last name. The root has no parent.
func (s *session) parent(op, p string) (dir proto.Attr, name string, err error) {
	if p == "/" {
		return proto.Attr{}, "", &opError{op: op, path: p, err: errors.New("not allowed on the root directory")}
	}
	dir, err = s.resolve(op, path.Dir(p))
	if err == nil && !dir.IsDir() {
		err = s.fail(op, p, syscall.ENOTDIR)
	}
	return dir, path.Base(p), err
}

// Argument checks that are usage errors (exit code 2).

func exactArgs(n int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if err := cobra.ExactArgs(n)(cmd, args); err != nil {
			return usageError{err}
		}
		return nil
	}
}

func rangeArgs(lo, hi int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if err := cobra.RangeArgs(lo, hi)(cmd, args); err != nil {
			return usageError{err}
		}
		return nil
	}
}

func minArgs(n int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if err := cobra.MinimumNArgs(n)(cmd, args); err != nil {
			return usageError{err}
		}
		return nil
	}
}

// parseSize is parseBytes for an argument: a usage error names it.
func parseSize(what, s string) (uint64, error) {
	v, err := parseBytes(s)
	if err != nil {
		return 0, usageError{fmt.Errorf("%s: %w", what, err)}
	}
	return uint64(v), nil
}

// copyBufferSize is the buffer between a stream and stdin or stdout.
const copyBufferSize = 1 << 20

// copyStream copies r to w through a large buffer, hiding ReadFrom and
// WriteTo, which would copy in 32 KiB pieces.
func copyStream(w io.Writer, r io.Reader) (int64, error) {
	return io.CopyBuffer(struct{ io.Writer }{w}, struct{ io.Reader }{r}, make([]byte, copyBufferSize))
}

// forEach runs fn on every item with up to n at once (requests pipelined on
// the one connection) and returns the first error, in item order.
func forEach[T any](n int, items []T, fn func(i int, item T) error) error {
	errs := make([]error, len(items))
	sem := make(chan struct{}, n)
	var wg sync.WaitGroup
	for i, it := range items {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			errs[i] = fn(i, it)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
