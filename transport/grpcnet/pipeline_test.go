package grpcnet

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/splitguard/splitguard/pki"
	"github.com/splitguard/splitguard/transport"
)

// TestPipelineResendAfterBrokenStream sends three pipelined steps, lets
// the active party answer all three, then breaks the client's stream
// before it has read any answer: Receive re-sends the three on a new
// stream, the server answers steps 0 and 1 from its window of recent
// answers and step 2 as the retry of its last message, and the active
// party applies each step once. Without the window (PipelineDepth 0 on
// the server) the re-sent step 0 is refused as a replay.
func TestPipelineResendAfterBrokenStream(t *testing.T) {
	for _, window := range []bool{true, false} {
		p := newPKI(t)
		so := ServerOptions{TLS: p.server(t)}
		if window {
			so.PipelineDepth = 3
		}
		s := startServer(t, so)
		e := runEcho(s, nil)
		c := dial(t, s.Addr(), ClientOptions{TLS: p.client(t, pki.FilesIn(p.dir, "passive")), PipelineDepth: 3,
			BackoffBase: 10 * time.Millisecond})
		ctx := context.Background()
		if _, err := c.Hello(ctx, Hello{Party: "passive", Config: fp}); err != nil {
			t.Fatal(err)
		}
		var sent []*transport.Forward
		for step := range int64(3) {
			f := forward(transport.Train, step, int(step), 4, 4)
			if err := c.Send(ctx, f); err != nil {
				t.Fatalf("send step %d: %v", step, err)
			}
			sent = append(sent, f)
		}
		// Wait until the active party has answered all three.
		deadline := time.Now().Add(10 * time.Second)
		for {
			e.mu.Lock()
			n := len(e.seen)
			e.mu.Unlock()
			s.mu.Lock()
			answered := s.lastReply != nil
			s.mu.Unlock()
			if n == 3 && answered {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the active party answered %d of 3 steps", n)
			}
			time.Sleep(time.Millisecond)
		}
		c.mu.Lock()
		c.dropStream() // the connection breaks with every answer unread
		c.mu.Unlock()
		b, err := c.Receive(ctx)
		if !window {
			if err == nil {
				t.Fatal("without the server's window, the re-sent step 0 was answered")
			}
			continue
		}
		if err != nil {
			t.Fatalf("receive step 0: %v", err)
		}
		checkAnswer(t, sent[0], b)
		for _, f := range sent[1:] {
			b, err := c.Receive(ctx)
			if err != nil {
				t.Fatalf("receive step %d: %v", f.Step, err)
			}
			checkAnswer(t, f, b)
		}
		if r := s.Stats().Retries; r != 3 {
			t.Errorf("server answered %d re-sent messages, want 3", r)
		}
		_ = c.Close()
		seen, _ := e.wait(t)
		want := []key{{0, transport.Train, 0}, {1, transport.Train, 1}, {2, transport.Train, 2}}
		if !slices.Equal(seen, want) {
			t.Fatalf("active applied %v, want each step once: %v", seen, want)
		}
	}
}
