// Package linktest emulates a network link between two processes on one
// machine, for tests and measurements: a TCP proxy on the loopback
// interface that delays every byte by a one-way delay and limits each
// direction's bandwidth with a token bucket (golang.org/x/time/rate), as a
// wide-area link between two data centres would. These machines have no
// netem; the proxy needs no privileges.
//
// A direction's bytes leave the sender's side of the proxy no faster than
// the bucket allows (at most Burst bytes at once, then BytesPerSecond) and
// are written to the receiver Delay after they left: N bytes sent at once
// arrive no earlier than Delay + (N − Burst)/BytesPerSecond after they
// were sent, and about Delay + N/BytesPerSecond on an idle link.
package linktest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// DefaultBurst is the token bucket's depth, and the largest piece of data
// the proxy forwards at once, when Link.Burst is 0.
const DefaultBurst = 16 << 10

// Link is one direction of an emulated link.
type Link struct {
	// Delay is the one-way propagation delay (half a round trip).
	Delay time.Duration
	// BytesPerSecond is the bandwidth; 0 means unlimited.
	BytesPerSecond float64
	// Burst is the token bucket's depth in bytes (0: DefaultBurst).
	Burst int
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
}

type direction struct {
	link  Link
	limit *rate.Limiter // nil: unlimited
	burst int
}

func newDirection(l Link) (direction, error) {
	if l.Delay < 0 || l.BytesPerSecond < 0 || l.Burst < 0 {
		return direction{}, fmt.Errorf("linktest: negative link setting %+v", l)
	}
	d := direction{link: l, burst: l.Burst}
	if d.burst == 0 {
		d.burst = DefaultBurst
	}
	if l.BytesPerSecond > 0 {
		d.limit = rate.NewLimiter(rate.Limit(l.BytesPerSecond), d.burst)
	}
	return d, nil
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
		go p.pipe(c, t, &p.up)
		go p.pipe(t, c, &p.down)
	}
}

// chunk is a piece of data in flight and the time it reaches the far end.
type chunk struct {
	b  []byte
	at time.Time
}

// pipe forwards src to dst through d: a reader that takes bytes off src
// as the token bucket allows and stamps them with their arrival time, and
// a writer that writes each piece at that time.
func (p *Proxy) pipe(src, dst net.Conn, d *direction) {
	defer p.wg.Done()
	q := make(chan chunk, 1024)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for c := range q {
			if w := time.Until(c.at); w > 0 {
				t := time.NewTimer(w)
				select {
				case <-t.C:
				case <-p.ctx.Done():
					t.Stop()
					return
				}
			}
			if _, err := dst.Write(c.b); err != nil {
				return
			}
		}
		if tc, ok := dst.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		}
	}()
	buf := make([]byte, d.burst)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if d.limit != nil && d.limit.WaitN(p.ctx, n) != nil {
				break
			}
			q <- chunk{b: append([]byte(nil), buf[:n]...), at: time.Now().Add(d.link.Delay)}
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
