package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestLinkProxyForwardsWithDelay starts link-proxy in front of an echo
// server, reads its address from --addr-file, and checks that bytes come
// back unchanged no sooner than one round trip of the emulated link (the
// request crosses up, the echo crosses down), and that a cancelled
// command stops with its idle line.
func TestLinkProxyForwardsWithDelay(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { _, _ = io.Copy(c, c); c.Close() }()
		}
	}()
	addrFile := filepath.Join(t.TempDir(), "addr")
	ctx, cancel := context.WithCancel(context.Background())
	cmd := newRootCmd()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetArgs([]string{"link-proxy", "--target", ln.Addr().String(), "--rtt", "60ms", "--up", "0", "--down", "0", "--addr-file", addrFile})
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(ctx) }()
	var addr string
	for deadline := time.Now().Add(10 * time.Second); addr == "" && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if b, err := os.ReadFile(addrFile); err == nil {
			addr = strings.TrimSpace(string(b))
		}
	}
	if addr == "" {
		cancel()
		t.Fatalf("no address written to --addr-file; err %v", <-done)
	}
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	msg := []byte("through the emulated link")
	start := time.Now()
	if _, err := c.Write(msg); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(msg))
	if _, err := io.ReadFull(c, got); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	c.Close()
	if !bytes.Equal(got, msg) {
		t.Errorf("echo %q, want %q", got, msg)
	}
	if took < 60*time.Millisecond {
		t.Errorf("the echo came back after %v, before one 60 ms round trip", took)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"listening on " + addr, "forwarding to " + ln.Addr().String(), "round trip 60ms", "stopped; the wire sat idle"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

// TestLinkProxyRefusesBadFlags checks each refusal's message.
func TestLinkProxyRefusesBadFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{}, "--target is required"},
		{[]string{"--target", "127.0.0.1:1", "--rtt", "-1ms"}, "--rtt -1ms must not be negative"},
		{[]string{"--target", "127.0.0.1:1", "--up", "-5"}, "--up -5"},
		{[]string{"--target", "127.0.0.1:1", "--down", "NaN"}, "--down NaN"},
		{[]string{"--target", "192.0.2.1:7443"}, "not a loopback address"},
	} {
		cmd := newRootCmd()
		cmd.SetOut(io.Discard)
		cmd.SetErr(io.Discard)
		cmd.SetArgs(append([]string{"link-proxy"}, tc.args...))
		err := cmd.Execute()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want one containing %q", tc.args, err, tc.want)
		}
	}
}
