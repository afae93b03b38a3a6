package linktest

import (
	"bytes"
	"io"
	"net"
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
// Delay + (N − Burst)/BytesPerSecond after the first was sent (a token
// bucket of depth Burst never lets more through), and (loosely) not
// seconds later than Delay + N/BytesPerSecond. The bytes arrive intact
// and in order. The other direction is unlimited and carries nothing.
func TestOneWayTransfer(t *testing.T) {
	const n = 2 << 20
	up := Link{Delay: 40 * time.Millisecond, BytesPerSecond: 16 << 20} // 2 MiB at 16 MiB/s: 125 ms
	arrived := make(chan time.Time, 1)
	got := make(chan []byte, 1)
	target := listen(t, func(c net.Conn) {
		defer c.Close()
		b, _ := io.ReadAll(io.LimitReader(c, n))
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
	took := end.Sub(t0)
	lower := up.Delay + time.Duration(float64(n-DefaultBurst)/up.BytesPerSecond*float64(time.Second))
	nominal := up.Delay + time.Duration(float64(n)/up.BytesPerSecond*float64(time.Second))
	if took < lower {
		t.Errorf("%d bytes took %v, faster than the link allows (%v)", n, took, lower)
	}
	if took > nominal+5*time.Second {
		t.Errorf("%d bytes took %v, the link's closed form is %v", n, took, nominal)
	}
	t.Logf("%d bytes in %v; closed form %v (at least %v)", n, took, nominal, lower)
}

// TestRoundTrip checks that a one-byte exchange with an echo server takes
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
