package transporttest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/splitguard/splitguard/transport"
)

// PipelineDepth is the depth testPipeline fills: a pipelined pair under
// test must accept this many training messages in flight.
const PipelineDepth = 3

// testPipeline checks transport.Pipeline, when the passive end has it:
// PipelineDepth training messages sent before the first answer is
// received arrive in order and bit for bit, their answers come back in
// order and bit for bit although the active party answers from one
// reused buffer, and the refusals of the contract: an Eval message sent
// with Send, an Exchange while a message is in flight, a replay, one
// message more than the depth (not checked: the limit is the
// implementation's), and Receive with nothing in flight. Then an
// evaluation round by Exchange works as usual.
func testPipeline(t *testing.T, p transport.PassiveConn, a transport.ActiveConn) {
	pl, ok := p.(transport.Pipeline)
	if !ok {
		t.Skip("the passive end is not a transport.Pipeline")
	}
	ctx := context.Background()
	s := serve(t, a, answerFor)
	var plan []*transport.Forward
	for st := range int64(2 * PipelineDepth) {
		plan = append(plan, msg(transport.Train, st, 0, int(st), 4, 3))
	}
	// Two rounds: fill the pipeline, then keep it full while receiving.
	sent := 0
	for i := range PipelineDepth {
		within(t, "Send", func() {
			if err := pl.Send(ctx, plan[i]); err != nil {
				t.Fatalf("Send of %s: %v", name(plan[i]), err)
			}
		})
		sent++
	}
	if n := pl.InFlight(); n != PipelineDepth {
		t.Errorf("InFlight %d after %d sends, want %d", n, PipelineDepth, PipelineDepth)
	}
	if _, err := p.Exchange(ctx, msg(transport.Train, 100, 0, 100, 4, 3)); err == nil {
		t.Error("an Exchange while pipelined messages are in flight was accepted")
	}
	if err := pl.Send(ctx, msg(transport.Train, 1, 0, 1, 4, 3)); err == nil {
		t.Error("a replay of step 1 sent with Send was accepted")
	}
	ev := msg(transport.Eval, 10, 0, 0, 2, 3)
	ev.Last = true
	if err := pl.Send(ctx, ev); err == nil {
		t.Error("an Eval message sent with Send was accepted")
	}
	for recv := range plan {
		var b *transport.Backward
		var err error
		within(t, "Receive", func() { b, err = pl.Receive(ctx) })
		if err != nil {
			t.Fatalf("Receive of %s: %v", name(plan[recv]), err)
		}
		if d := diffBackward(b, answerFor(plan[recv])); d != "" {
			t.Fatalf("answer to %s: %s", name(plan[recv]), d)
		}
		if sent < len(plan) {
			within(t, "Send", func() { err = pl.Send(ctx, plan[sent]) })
			if err != nil {
				t.Fatalf("Send of %s: %v", name(plan[sent]), err)
			}
			sent++
		}
		// The answer stays valid until the next Receive, while the active
		// party answers later messages from its one reused buffer.
		if recv+1 < len(plan) {
			if _, err := s.waitFor(t, recv+2); err == nil {
				if d := diffBackward(b, answerFor(plan[recv])); d != "" {
					t.Fatalf("answer to %s, once the next was answered: %s", name(plan[recv]), d)
				}
			}
		}
	}
	if _, err := pl.Receive(ctx); err == nil {
		t.Error("Receive with nothing in flight returned no error")
	}
	exchange(t, p, ev)
	closeAndCheck(t, p, s, append(plan, ev))
}

// waitFor waits (up to Watchdog) until the server has received n
// messages; it returns an error if it ended or did not get there.
func (s *server) waitFor(t *testing.T, n int) (int, error) {
	t.Helper()
	deadline := time.Now().Add(Watchdog)
	for {
		s.mu.Lock()
		got := len(s.got)
		s.mu.Unlock()
		if got >= n {
			return got, nil
		}
		select {
		case <-s.done:
			return got, errors.New("the active party stopped")
		default:
		}
		if time.Now().After(deadline) {
			return got, errors.New("timed out")
		}
		time.Sleep(time.Millisecond)
	}
}
