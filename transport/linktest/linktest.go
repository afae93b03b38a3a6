// Package linktest emulates a network link between two processes on one
// machine, for tests and measurements: a TCP proxy on the loopback
// interface that delays every byte by a one-way delay and sends each
// direction's bytes no faster than its bandwidth, as a wide-area link
// between two data centres would. These machines have no netem; the proxy
// needs no privileges.
//
// Each direction is a wire that serves the bytes in order at
// BytesPerSecond: a byte read from the sender at time r leaves the wire
// when every byte before it has left and its own transfer time has
// passed, no earlier than r + (its piece)/BytesPerSecond, and is written
// to the receiver Delay after it left. N bytes sent at once on an idle
// link therefore arrive Delay + N/BytesPerSecond after they were sent.
// The wire's clock does not depend on when the proxy's goroutines happen
// to run: the proxy reads ahead of the wire (up to Queue of its time, a
// router's queue) and stamps each piece with the time it leaves, so a
// proxy goroutine that waits for a processor — on a machine whose cores
// the parties' compute keeps busy — delays no byte beyond that time as
// long as the queue holds data, where a token bucket refilled only while
// its reader runs loses the link time it waited (docs/methods/wan.md,
// "The planner's check").
package linktest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultBurst is the largest piece of data the proxy forwards at once
// when Link.Burst is 0.
const DefaultBurst = 16 << 10

// DefaultQueue is how much of the wire's time the proxy reads ahead when
// Link.Queue is 0.
const DefaultQueue = 50 * time.Millisecond

// maxRead bounds one read from the sender: everything the sender has
// written, up to the queue, is taken in one wake-up of the reader.
const maxRead = 1 << 20

// Link is one direction of an emulated link.
type Link struct {
	// Delay is the one-way propagation delay (half a round trip).
	Delay time.Duration
	// BytesPerSecond is the bandwidth; 0 means unlimited.
	BytesPerSecond float64
	// Burst is the largest piece of data forwarded at once, in bytes (0:
	// DefaultBurst): each piece reaches the receiver when its last byte
	// has crossed the link.
	Burst int
	// Queue is how far ahead of the wire the proxy reads, in the wire's
	// time (0: DefaultQueue): the bytes read but not yet on the wire, as
	// in a router's queue. Beyond it the sender's own socket buffers it.
	Queue time.Duration

	// afterRead, when set (by a test), runs after every read from the
	// sender: a reader that waits for a processor.
	afterRead func()
}

// Mbit returns a bandwidth of n megabits (10^6 bits) per second in bytes
// per second.
func Mbit(n float64) float64 { return n * 1e6 / 8 }

// Proxy accepts TCP connections on a loopback address and forwards each to
// a target on the loopback interface, through the Up link (client to
// target) and the Down link (target to client). The bandwidth of each
// direction is shared by all connections.
type Proxy struct {
	ln       net.Listener
	target   string
	up, down direction
	ctx      context.Context
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	mu       sync.Mutex
	conns    map[net.Conn]struct{}
	// idle is each direction's wire time left unused (up, down), in
	// nanoseconds: Idle.
	idle [2]atomic.Int64
}

// Idle returns how long each direction's wire (up, down) has been idle
// between bytes, summed over its connections: from when a connection's
// wire had sent everything it was given to when the proxy next read
// bytes for it (the time before a connection's first byte is not
// counted). Over a run limited by a link's bandwidth the wire is never
// idle; idle time there means the sender had nothing written for the
// link to carry.
func (p *Proxy) Idle() (up, down time.Duration) {
	return time.Duration(p.idle[0].Load()), time.Duration(p.idle[1].Load())
}

type direction struct {
	link  Link
	burst int
	queue time.Duration
	read  int // bytes taken from the sender at once
}

func newDirection(l Link) (direction, error) {
	if l.Delay < 0 || !(l.BytesPerSecond >= 0 && l.BytesPerSecond <= math.MaxFloat64) || l.Burst < 0 || l.Queue < 0 {
		return direction{}, fmt.Errorf("linktest: link setting %+v: want no negative or infinite value", l)
	}
	d := direction{link: l, burst: l.Burst, queue: l.Queue}
	if d.burst == 0 {
		d.burst = DefaultBurst
	}
	if d.queue == 0 {
		d.queue = DefaultQueue
	}
	d.read = maxRead
	if l.BytesPerSecond > 0 {
		d.read = int(min(maxRead, max(float64(d.burst), l.BytesPerSecond*d.queue.Seconds())))
	}
	return d, nil
}

// transfer is the time n bytes take on d's wire (0 when unlimited).
func (d *direction) transfer(n int) time.Duration {
	if d.link.BytesPerSecond == 0 {
		return 0
	}
	return time.Duration(math.Round(float64(n) / d.link.BytesPerSecond * 1e9))
}

// wire is one direction's emulated wire: when it has sent every byte
// given to it so far.
type wire struct {
	d    *direction
	free time.Time
	// pool holds the buffers of pieces already written, for reuse (nil:
	// every piece gets a new one).
	pool chan []byte
	// idle sums the time the wire had nothing to send (nil: not
	// counted).
	idle *atomic.Int64
}

// buffer returns a buffer of n bytes (at most d.burst) for a piece: one
// the writer gave back, or a new one of d.burst's capacity.
func (w *wire) buffer(n int) []byte {
	select {
	case b := <-w.pool:
		return b[:n]
	default:
		return make([]byte, n, w.d.burst)
	}
}

// take puts b, read from the sender at now, on the wire in pieces of at
// most d.burst bytes, each stamped with the time it reaches the receiver
// (when its last byte has left the wire, plus the delay), and returns
// them.
func (w *wire) take(b []byte, now time.Time, out []chunk) []chunk {
	for len(b) > 0 {
		n := min(len(b), w.d.burst)
		if w.free.Before(now) {
			if !w.free.IsZero() && w.idle != nil {
				w.idle.Add(int64(now.Sub(w.free)))
			}
			w.free = now
		}
		w.free = w.free.Add(w.d.transfer(n))
		piece := w.buffer(n)
		copy(piece, b[:n])
		out = append(out, chunk{b: piece, at: w.free.Add(w.d.link.Delay)})
		b = b[n:]
	}
	return out
}

// ahead is how long until the wire has room in its queue again: how far
// past now plus the queue it is booked (0 when it has room).
func (w *wire) ahead(now time.Time) time.Duration {
	return max(0, w.free.Sub(now)-w.d.queue)
}

// Start listens on 127.0.0.1 (a free port) and forwards connections to
// target, which must be a loopback address ("127.0.0.1:port",
// "[::1]:port" or "localhost:port").
func Start(target string, up, down Link) (*Proxy, error) {
	host, _, err := net.SplitHostPort(target)
	if err != nil {
		return nil, fmt.Errorf("linktest: target %q: %w", target, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return nil, fmt.Errorf("linktest: target %q is not a loopback address", target)
	}
	p := &Proxy{target: target, conns: map[net.Conn]struct{}{}}
	if p.up, err = newDirection(up); err != nil {
		return nil, err
	}
	if p.down, err = newDirection(down); err != nil {
		return nil, err
	}
	if p.ln, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
		return nil, err
	}
	p.ctx, p.cancel = context.WithCancel(context.Background())
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr is the proxy's address ("127.0.0.1:port"), to dial instead of the
// target.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Close stops accepting, closes every forwarded connection and waits for
// the proxy's goroutines to end.
func (p *Proxy) Close() error {
	p.cancel()
	err := p.ln.Close()
	p.mu.Lock()
	for c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
	return err
}

func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ctx.Err() != nil {
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		t, err := net.Dial("tcp", p.target)
		if err != nil {
			_ = c.Close()
			continue
		}
		if !p.track(c) || !p.track(t) {
			_ = c.Close()
			_ = t.Close()
			return
		}
		p.wg.Add(2)
		go p.pipe(c, t, &p.up, &p.idle[0])
		go p.pipe(t, c, &p.down, &p.idle[1])
	}
}

// chunk is a piece of data in flight and the time it reaches the far end.
type chunk struct {
	b  []byte
	at time.Time
}

// pipe forwards src to dst through d: a reader that takes the bytes off
// src as they come (up to d.queue of the wire's time ahead of it) and
// stamps each piece with the time it reaches the far end (wire.take), and
// a writer that writes the pieces at those times (deliver). The pieces'
// buffers go back to the reader for reuse.
func (p *Proxy) pipe(src, dst net.Conn, d *direction, idle *atomic.Int64) {
	defer p.wg.Done()
	q := make(chan chunk, queuedPieces)
	pool := make(chan []byte, queuedPieces)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if !p.deliver(q, pool, func(b net.Buffers) error { _, err := b.WriteTo(dst); return err }) {
			return
		}
		if tc, ok := dst.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		}
	}()
	buf := make([]byte, d.read)
	w := wire{d: d, pool: pool, idle: idle}
	var pieces []chunk
	for {
		n, err := src.Read(buf)
		if d.link.afterRead != nil {
			d.link.afterRead()
		}
		if n > 0 {
			now := time.Now()
			pieces = w.take(buf[:n], now, pieces[:0])
			if !p.enqueue(q, pieces) || !p.sleep(w.ahead(time.Now())) {
				break
			}
			clear(pieces)
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				_ = dst.Close()
			}
			break
		}
	}
	close(q)
	<-done
}

// queuedPieces bounds the pieces between a pipe's reader and its writer.
const queuedPieces = 1024

// deliver writes the pieces of q at their times, until q is closed
// (true) or a write fails or the proxy is closed (false). Every piece due
// when the writer wakes goes out in one write (a writev of their
// buffers), so a writer that ran late, or pieces due together, cost one
// system call and one wake-up, not one each; one timer serves every wait.
// Each piece's buffer is given back to pool after its write.
func (p *Proxy) deliver(q <-chan chunk, pool chan<- []byte, write func(net.Buffers) error) bool {
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	var (
		batch, out net.Buffers
		next       chunk
		have, open = false, true
	)
	for {
		if !have {
			if next, open = <-q; !open {
				return true
			}
		}
		if wait := time.Until(next.at); wait > 0 {
			timer.Reset(wait)
			select {
			case <-timer.C:
			case <-p.ctx.Done():
				return false
			}
		}
		batch, have = append(batch[:0], next.b), false
		now := time.Now()
	gather:
		for {
			select {
			case c, ok := <-q:
				if !ok {
					open = false
					break gather
				}
				if c.at.After(now) {
					next, have = c, true
					break gather
				}
				batch = append(batch, c.b)
			default:
				break gather
			}
		}
		out = append(out[:0], batch...) // WriteTo consumes its argument
		if err := write(out); err != nil {
			return false
		}
		for i, b := range batch {
			select {
			case pool <- b:
			default:
			}
			batch[i] = nil
		}
		if !open {
			return true
		}
	}
}

// enqueue hands the pieces to the writer and reports false when the
// proxy was closed meanwhile.
func (p *Proxy) enqueue(q chan<- chunk, pieces []chunk) bool {
	for _, c := range pieces {
		select {
		case q <- c:
		case <-p.ctx.Done():
			return false
		}
	}
	return true
}

// sleep waits for d (nothing when d ≤ 0) and reports false when the proxy
// was closed meanwhile.
func (p *Proxy) sleep(d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-p.ctx.Done():
		return false
	}
}
