package server

import (
	"time"

	"ustore/internal/assert"
	"ustore/proto"
)

// lastFrame encodes a failed response to end the connection with: for
// request id (op) when the frame that broke the rules named one that is
// not in flight, for the connection (id 0) otherwise. Its small buffer is
// the connection's own, outside the budget: one per connection.
func (c *conn) lastFrame(id uint64, op proto.Op, s proto.Status, msg string) *response {
	if id == 0 {
		op = 0
	}
	buf := proto.GetBuffer(0)
	b, err := proto.AppendResponse(*buf, id, op, s, msg, nil)
	assert.That(err == nil, "server: a failed response does not encode")
	*buf = b
	return &response{buf: buf}
}

// respond encodes the response to request id — reply, or err's status —
// into out (a new small buffer if nil: a reply without data) and hands it
// to the writer; the caller holds the request's slot and charge, which
// the writer gives back.
func (c *conn) respond(id uint64, op proto.Op, out *[]byte, reply proto.Reply, err error, charge int64) {
	c.out <- c.encode(id, op, out, reply, err, charge)
}

// encode encodes the response to request id into out (a new small buffer
// if nil), as the writer takes it: with its slot and charge.
func (c *conn) encode(id uint64, op proto.Op, out *[]byte, reply proto.Reply, err error, charge int64) response {
	if out == nil {
		out = proto.GetBuffer(0)
	}
	room := cap(*out)
	*out = encodeResponse((*out)[:0], id, op, reply, err, c.log)
	// Sized by replySizeMax, a response never grows its buffer: the
	// charge covers what it holds.
	assert.That(cap(*out) == room && int64(room) <= charge, "server: a response outgrew its charged buffer")
	return response{buf: out, id: id, slot: true, charge: charge}
}

// writeLoop writes responses until out is closed, flushing when no other
// response is waiting. Each write has WriteTimeout to complete: a client
// that does not read its responses is taken as gone. After a write error
// it keeps draining out (giving slots, budget and buffers back) so that no
// worker ever blocks, and cancels the connection's context: the peer is
// gone.
func (c *conn) writeLoop() {
	for r := range c.out {
		c.wmu.Lock()
		c.writeLocked(r, len(c.out) == 0)
		c.wmu.Unlock()
		c.release(r)
	}
	c.wmu.Lock()
	c.flushLocked()
	c.wmu.Unlock()
}

// writeLocked writes r into the connection's buffered writer, and flushes
// it when flush is set; the caller holds wmu. r's id leaves inflight just
// before, so that a client reusing an id after reading its response is
// never refused. After a write error nothing more is written (broken).
func (c *conn) writeLocked(r response, flush bool) {
	if r.id != 0 {
		c.mu.Lock()
		_, ok := c.inflight[r.id]
		delete(c.inflight, r.id)
		c.mu.Unlock()
		assert.That(ok, "server: a response for a request id not in flight")
	}
	if c.broken {
		return
	}
	c.wd.ensure(time.Now(), c.s.opts.WriteTimeout, c.nc.SetWriteDeadline)
	_, err := c.bw.Write(*r.buf)
	if err == nil && flush {
		err = c.bw.Flush()
	}
	c.writeFailed(err)
}

// flushLocked writes out what the buffered writer holds; the caller holds
// wmu.
func (c *conn) flushLocked() {
	if c.broken || c.bw.Buffered() == 0 {
		return
	}
	c.wd.ensure(time.Now(), c.s.opts.WriteTimeout, c.nc.SetWriteDeadline)
	c.writeFailed(c.bw.Flush())
}

// writeFailed marks the connection broken after a write error (not nil):
// the peer is gone, or did not read within WriteTimeout.
func (c *conn) writeFailed(err error) {
	if err == nil {
		return
	}
	c.broken = true
	c.log.Debug("write failed; dropping the responses still to come", "err", err)
	c.cancel()
}

// release gives back what a written (or dropped) response held: its
// buffer, its budget charge, its slot.
func (c *conn) release(r response) {
	proto.PutBuffer(r.buf)
	c.s.budget.release(r.charge)
	if r.slot {
		<-c.slots
	}
}
