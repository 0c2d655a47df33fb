package servicebench

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
)

// The echo floor: a Unix-socket server that does nothing but read a request
// and answer it, with the sizes of the protocol's frames for an op. A
// request is u32 size (of the whole request), u32 the response's size, and
// padding; a response is u32 its size and padding. Its reader and writer are
// buffered as the server's are (64 KiB each, a flush when no further request
// is buffered), so that pipelined requests are answered in batches as there.

const echoHeader = 8

// echoBufferSize is the echo server's and client's socket buffer size.
const echoBufferSize = 64 << 10

// echoSizeMax bounds a request or response: one full protocol frame.
const echoSizeMax = 2 << 20

// echoServer serves the echo protocol on a Unix socket.
type echoServer struct {
	ln   *net.UnixListener
	wg   sync.WaitGroup
	mu   sync.Mutex
	conn map[net.Conn]struct{}
}

func startEcho(path string) (*echoServer, error) {
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return nil, err
	}
	e := &echoServer{ln: ln, conn: map[net.Conn]struct{}{}}
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			e.mu.Lock()
			e.conn[nc] = struct{}{}
			e.mu.Unlock()
			e.wg.Add(1)
			go func() {
				defer e.wg.Done()
				serveEcho(nc)
				e.mu.Lock()
				delete(e.conn, nc)
				e.mu.Unlock()
				nc.Close()
			}()
		}
	}()
	return e, nil
}

// close stops the server and waits for its goroutines.
func (e *echoServer) close() {
	e.ln.Close()
	e.mu.Lock()
	for nc := range e.conn {
		nc.Close()
	}
	e.mu.Unlock()
	e.wg.Wait()
}

// serveEcho answers requests until the connection ends.
func serveEcho(nc net.Conn) {
	br := bufio.NewReaderSize(nc, echoBufferSize)
	bw := bufio.NewWriterSize(nc, echoBufferSize)
	body := make([]byte, echoSizeMax)
	resp := make([]byte, echoSizeMax)
	for {
		if _, err := io.ReadFull(br, body[:echoHeader]); err != nil {
			return
		}
		reqLen := binary.LittleEndian.Uint32(body)
		respLen := binary.LittleEndian.Uint32(body[4:])
		if reqLen < echoHeader || reqLen > echoSizeMax || respLen < 4 || respLen > echoSizeMax {
			return
		}
		if _, err := io.ReadFull(br, body[echoHeader:reqLen]); err != nil {
			return
		}
		binary.LittleEndian.PutUint32(resp, respLen)
		if _, err := bw.Write(resp[:respLen]); err != nil {
			return
		}
		if br.Buffered() == 0 {
			if err := bw.Flush(); err != nil {
				return
			}
		}
	}
}

// echoConn is a client connection to the echo server. Synchronous (call)
// at depth 1: the caller writes and reads. Pipelined (start, then
// callPipelined) otherwise: a reader goroutine reads responses, which come
// in request order, and wakes their callers in that order.
type echoConn struct {
	nc   *net.UnixConn
	br   *bufio.Reader
	resp []byte // the synchronous caller's response buffer

	wmu  sync.Mutex // one request written at a time, queued in write order
	qmu  sync.Mutex
	q    []chan error // callers waiting, in request order
	rerr error        // under qmu: why the reader ended
	done chan struct{}
}

func dialEcho(path string) (*echoConn, error) {
	nc, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return nil, err
	}
	return &echoConn{nc: nc, br: bufio.NewReaderSize(nc, echoBufferSize), resp: make([]byte, echoSizeMax)}, nil
}

// echoRequest makes a request of reqLen bytes asking for respLen.
func echoRequest(reqLen, respLen int) []byte {
	b := make([]byte, reqLen)
	binary.LittleEndian.PutUint32(b, uint32(reqLen))
	binary.LittleEndian.PutUint32(b[4:], uint32(respLen))
	return b
}

// call sends req and reads its response on the caller's goroutine.
func (e *echoConn) call(req []byte) error {
	if _, err := e.nc.Write(req); err != nil {
		return err
	}
	return e.readResponse(e.resp, binary.LittleEndian.Uint32(req[4:]))
}

func (e *echoConn) readResponse(buf []byte, want uint32) error {
	if _, err := io.ReadFull(e.br, buf[:4]); err != nil {
		return err
	}
	n := binary.LittleEndian.Uint32(buf)
	if n != want {
		return fmt.Errorf("echo: a response of %d bytes, want %d", n, want)
	}
	_, err := io.ReadFull(e.br, buf[4:n])
	return err
}

// start starts the reader goroutine of a pipelined connection.
func (e *echoConn) start() {
	e.done = make(chan struct{})
	go func() {
		defer close(e.done)
		buf := make([]byte, echoSizeMax)
		for {
			if _, err := io.ReadFull(e.br, buf[:4]); err != nil {
				e.end(err)
				return
			}
			n := binary.LittleEndian.Uint32(buf)
			if n < 4 || n > echoSizeMax {
				e.end(fmt.Errorf("echo: a response of %d bytes", n))
				return
			}
			if _, err := io.ReadFull(e.br, buf[4:n]); err != nil {
				e.end(err)
				return
			}
			e.qmu.Lock()
			if len(e.q) == 0 {
				e.qmu.Unlock()
				e.end(errors.New("echo: a response to no request"))
				return
			}
			ch := e.q[0]
			e.q = e.q[1:]
			e.qmu.Unlock()
			ch <- nil
		}
	}()
}

// end fails every waiting caller with err.
func (e *echoConn) end(err error) {
	e.qmu.Lock()
	defer e.qmu.Unlock()
	e.rerr = err
	for _, ch := range e.q {
		ch <- err
	}
	e.q = nil
}

// callPipelined sends req and waits for its response; ch (capacity 1) is
// the caller's own.
func (e *echoConn) callPipelined(req []byte, ch chan error) error {
	e.wmu.Lock()
	e.qmu.Lock()
	if e.rerr != nil {
		err := e.rerr
		e.qmu.Unlock()
		e.wmu.Unlock()
		return err
	}
	e.q = append(e.q, ch)
	e.qmu.Unlock()
	_, err := e.nc.Write(req)
	e.wmu.Unlock()
	if err != nil {
		e.nc.Close() // the reader fails every caller, this one included
	}
	return <-ch
}

// close closes the connection and waits for its reader, if any.
func (e *echoConn) close() {
	e.nc.Close()
	if e.done != nil {
		<-e.done
	}
}
