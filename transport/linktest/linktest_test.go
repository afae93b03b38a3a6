package linktest

import (
	"bytes"
	"context"
	"io"
	"math"
	"net"
	"sync/atomic"
	"testing"
	"time"
)

// listen starts a loopback server that hands every accepted connection to
// serve.
func listen(t *testing.T, serve func(net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go serve(c)
		}
	}()
	return ln.Addr().String()
}

func start(t *testing.T, target string, up, down Link) *Proxy {
	t.Helper()
	p, err := Start(target, up, down)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// TestOneWayTransfer sends N bytes one way and checks the time the last
// one arrives against the closed form of the link: no earlier than
// Delay + N/BytesPerSecond after they were sent (the wire serves the
// bytes in order at its bandwidth), and not much later. With
// lateReader the proxy's reader waits 5 ms after every read, as a
// goroutine waiting for a processor on a busy machine does: the link must
// still deliver at its bandwidth (a reader that took one 16 KiB piece per
// wake-up, or a token bucket of 16 KiB refilled only while it runs, would
// need 128 × 5 ms = 640 ms for the 2 MiB, where the link takes 165 ms;
// skipped under -short).
// The bytes arrive intact and in order. The other direction is unlimited
// and carries nothing.
func TestOneWayTransfer(t *testing.T) {
	const n = 2 << 20
	up := Link{Delay: 40 * time.Millisecond, BytesPerSecond: 16 << 20} // 2 MiB at 16 MiB/s: 125 ms
	nominal := up.Delay + time.Duration(float64(n)/up.BytesPerSecond*float64(time.Second))
	for _, tc := range []struct {
		name  string
		late  time.Duration
		slack time.Duration
	}{
		{"prompt reader", 0, 5 * time.Second},
		// 165 + 400 ms stays below the 680 ms a reader of one piece per
		// wake-up needs at least (128 reads × 5 ms, and the delay).
		{"late reader", 5 * time.Millisecond, 400 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.late > 0 && testing.Short() {
				t.Skip("a timing check against a tight bound: not under -short (a loaded machine, or -race, can miss it)")
			}
			up := up
			if tc.late > 0 {
				up.afterRead = func() { time.Sleep(tc.late) }
			}
			took := transferOnce(t, up, n)
			if took < nominal {
				t.Errorf("%d bytes took %v, faster than the link allows (%v)", n, took, nominal)
			}
			if took > nominal+tc.slack {
				t.Errorf("%d bytes took %v, the link's closed form is %v (slack %v)", n, took, nominal, tc.slack)
			}
		})
	}
}

// transferOnce sends n bytes through a proxy emulating up and returns
// the time from the send to the last byte's arrival; it fails t when the
// bytes do not arrive intact.
func transferOnce(t *testing.T, up Link, n int) time.Duration {
	t.Helper()
	arrived := make(chan time.Time, 1)
	got := make(chan []byte, 1)
	target := listen(t, func(c net.Conn) {
		defer c.Close()
		b, _ := io.ReadAll(io.LimitReader(c, int64(n)))
		arrived <- time.Now()
		got <- b
	})
	p := start(t, target, up, Link{})
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	data := make([]byte, n)
	for i := range data {
		data[i] = byte(i * 7 / 3)
	}
	t0 := time.Now()
	if _, err := c.Write(data); err != nil {
		t.Fatal(err)
	}
	var end time.Time
	select {
	case end = <-arrived:
	case <-time.After(30 * time.Second):
		t.Fatal("the data did not arrive")
	}
	if !bytes.Equal(<-got, data) {
		t.Fatal("the data arrived changed")
	}
	return end.Sub(t0)
}

// TestWireSchedule checks the wire's stamps against times worked out by
// hand: 10 bytes/s, pieces of 4 bytes, 1 s delay. 10 bytes read at 0 go
// as pieces of 4, 4 and 2 bytes leaving at 0.4, 0.8 and 1.0 s (arriving
// at 1.4, 1.8, 2.0 s); 3 bytes read at 0.5 s queue behind them and leave
// at 1.3 s; 1 byte read at 5 s finds the wire idle and leaves at 5.1 s.
// The wire is idle from 1.3 s to 5 s: 3.7 s.
// The queue of 0.5 s is full while the wire is booked beyond 0.5 s
// ahead: at 0.5 s, booked to 1.3 s, the reader waits 0.3 s.
func TestWireSchedule(t *testing.T) {
	d, err := newDirection(Link{Delay: time.Second, BytesPerSecond: 10, Burst: 4, Queue: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	at := func(s float64) time.Time { return time.Unix(0, 0).Add(time.Duration(s * float64(time.Second))) }
	var idle atomic.Int64
	w := wire{d: &d, idle: &idle}
	var got []chunk
	got = w.take(make([]byte, 10), at(0), got)
	got = w.take(make([]byte, 3), at(0.5), got)
	if wait := w.ahead(at(0.5)); wait != 300*time.Millisecond {
		t.Errorf("at 0.5 s the reader waits %v, want 300ms", wait)
	}
	got = w.take(make([]byte, 1), at(5), got)
	want := []struct {
		n  int
		at float64
	}{{4, 1.4}, {4, 1.8}, {2, 2.0}, {3, 2.3}, {1, 6.1}}
	if len(got) != len(want) {
		t.Fatalf("%d pieces, want %d", len(got), len(want))
	}
	for i, c := range got {
		if len(c.b) != want[i].n || !c.at.Equal(at(want[i].at)) {
			t.Errorf("piece %d: %d bytes at %v, want %d at %v", i, len(c.b), c.at.Sub(at(0)), want[i].n, time.Duration(want[i].at*float64(time.Second)))
		}
	}
	if d.read != 5 {
		t.Errorf("reads of %d bytes, want 5 (the queue's 0.5 s at 10 bytes/s)", d.read)
	}
	// Idle from 1.3 s, when the 13 bytes had left, to the read at 5 s;
	// never before the first byte.
	if got := time.Duration(idle.Load()); got != 3700*time.Millisecond {
		t.Errorf("the wire idle %v, want 3.7s", got)
	}
}

// at least the two one-way delays, whatever the bandwidth.
func TestRoundTrip(t *testing.T) {
	target := listen(t, func(c net.Conn) {
		defer c.Close()
		_, _ = io.Copy(c, c)
	})
	up, down := Link{Delay: 15 * time.Millisecond}, Link{Delay: 25 * time.Millisecond, BytesPerSecond: 1e6}
	p := start(t, target, up, down)
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for i := range 3 {
		t0 := time.Now()
		if _, err := c.Write([]byte{byte(i)}); err != nil {
			t.Fatal(err)
		}
		var b [1]byte
		if _, err := io.ReadFull(c, b[:]); err != nil || b[0] != byte(i) {
			t.Fatalf("echo %v, %v", b, err)
		}
		if took := time.Since(t0); took < up.Delay+down.Delay {
			t.Errorf("round trip %d took %v, less than the delays' sum %v", i, took, up.Delay+down.Delay)
		}
	}
}

// TestStartRefuses checks that the proxy forwards only to the loopback
// interface and refuses negative settings.
func TestStartRefuses(t *testing.T) {
	for _, tc := range []struct {
		target string
		up     Link
	}{
		{"192.0.2.1:80", Link{}},
		{"example.com:443", Link{}},
		{"no-port", Link{}},
		{"127.0.0.1:1", Link{Delay: -time.Second}},
		{"127.0.0.1:1", Link{Queue: -time.Second}},
		{"127.0.0.1:1", Link{BytesPerSecond: math.Inf(1)}},
	} {
		if p, err := Start(tc.target, tc.up, Link{}); err == nil {
			_ = p.Close()
			t.Errorf("Start(%q, %+v) accepted", tc.target, tc.up)
		}
	}
	if Mbit(100) != 12.5e6 {
		t.Errorf("Mbit(100) = %g bytes/s, want 12.5e6", Mbit(100))
	}
}

// TestDeliverGroupsDuePieces checks the writer's batching by its counts:
// three pieces already due when the writer wakes go out in one write, two
// pieces due 200 ms later wait for their time and go out together (one
// write per piece, the writer's old way, would be five), the bytes arrive
// whole and in order, and every piece's buffer goes back to the pool.
func TestDeliverGroupsDuePieces(t *testing.T) {
	p := &Proxy{ctx: context.Background()}
	q := make(chan chunk, 8)
	pool := make(chan []byte, 8)
	start := time.Now()
	later := start.Add(200 * time.Millisecond)
	var want []byte
	for i, at := range []time.Time{start.Add(-time.Second), start.Add(-time.Second), start, later, later} {
		b := bytes.Repeat([]byte{byte('a' + i)}, i+1)
		want = append(want, b...)
		q <- chunk{b: b, at: at}
	}
	close(q)
	type write struct {
		pieces []int
		at     time.Time
	}
	var writes []write
	var got []byte
	ok := p.deliver(q, pool, func(b net.Buffers) error {
		w := write{at: time.Now()}
		for _, piece := range b {
			w.pieces = append(w.pieces, len(piece))
			got = append(got, piece...)
		}
		writes = append(writes, w)
		return nil
	})
	if !ok {
		t.Fatal("deliver reported a failure")
	}
	if !bytes.Equal(got, want) {
		t.Errorf("delivered %q, want %q", got, want)
	}
	if len(writes) == 0 || len(writes) > 2 || len(writes[0].pieces) < 3 {
		t.Fatalf("writes of pieces %v, want the three due pieces in the first write and at most two writes", writes)
	}
	for _, w := range writes {
		if len(w.pieces) > 3 && w.at.Before(later) {
			t.Errorf("a piece due at +200ms written at %v", w.at.Sub(start))
		}
	}
	if len(pool) != 5 {
		t.Errorf("%d buffers back in the pool, want 5", len(pool))
	}
}
