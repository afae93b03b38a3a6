// Package transporttest checks an implementation of transport.PassiveConn
// and transport.ActiveConn against the contract stated in package
// transport, the way testing/fstest checks a file system: an
// implementation's test calls TestConn with a function that makes a fresh
// connected pair.
//
//	func TestConformance(t *testing.T) {
//		transporttest.TestConn(t, func(t *testing.T) (transport.PassiveConn, transport.ActiveConn) {
//			p, a := inproc.Pipe()
//			t.Cleanup(func() { _ = p.Close() })
//			return p, a
//		})
//	}
//
// The checks: fidelity and order of a run's messages (Order), unusual but
// well-formed batches passed bit for bit (UnusualBatches), replays
// (Replay), malformed messages and answers refused at the sender
// (MalformedForward, MalformedReply), NaN and ±Inf refused by the
// transport or left for the receiver's validation to refuse (NonFinite),
// schedule mismatches left to the receiver's transport.ValidateForward
// (ScheduleMismatch), cancellation of every waiting call (Cancel*), and
// Close (Close*). No check measures time; a call that does not return
// within Watchdog fails the check.
package transporttest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/splitguard/splitguard/tensor"
	"github.com/splitguard/splitguard/transport"
)

// NewPair returns the two connected ends of a fresh connection, ready for
// Exchange (any handshake done), and registers with t.Cleanup whatever
// must be released when t ends.
type NewPair func(t *testing.T) (transport.PassiveConn, transport.ActiveConn)

// Watchdog bounds how long the checks wait for a call that must return
// (promptly after a cancellation, or at once); past it the check fails as
// hung. It is not a timing assertion: a conforming call returns well
// within it even on a loaded machine.
var Watchdog = 20 * time.Second

// Deviation is a known departure of an implementation from the contract:
// the check named Check (a subtest name of TestConn, e.g. "CloseUnused")
// is skipped, and the skip says Reason. It exists so that a gap can be
// stated where it is tested until it is fixed, not to weaken the contract.
type Deviation struct {
	Check, Reason string
}

// TestConn runs the conformance checks as subtests of t, each on a fresh
// pair from newPair, skipping the checks of the known deviations.
func TestConn(t *testing.T, newPair NewPair, known ...Deviation) {
	checks := []check{
		{"Order", testOrder},
		{"UnusualBatches", testUnusual},
		{"Replay", testReplay},
		{"MalformedForward", testMalformedForward},
		{"MalformedReply", testMalformedReply},
		{"NonFinite", testNonFinite},
		{"ScheduleMismatch", testScheduleMismatch},
		{"CancelRecv", testCancelRecv},
		{"CancelExchange", testCancelExchange},
		{"CancelledExchange", testCancelledExchange},
		{"CancelReply", testCancelReply},
		{"Close", testClose},
		{"CloseAfterRefusal", testCloseAfterRefusal},
		{"CloseUnused", testCloseUnused},
		{"Pipeline", testPipeline},
	}
	skip := map[string]string{}
	for _, d := range known {
		if !slices.ContainsFunc(checks, func(c check) bool { return c.name == d.Check }) {
			t.Errorf("deviation from an unknown check %q", d.Check)
		}
		skip[d.Check] = d.Reason
	}
	for _, c := range checks {
		t.Run(c.name, func(t *testing.T) {
			if reason, ok := skip[c.name]; ok {
				t.Skip("known deviation: " + reason)
			}
			p, a := newPair(t)
			t.Cleanup(func() { _ = p.Close() })
			c.run(t, p, a)
		})
	}
}

// check is one conformance check.
type check struct {
	name string
	run  func(t *testing.T, p transport.PassiveConn, a transport.ActiveConn)
}

// special are the values the messages carry: signed zeros, subnormals,
// the extremes of float32 and values without a short decimal form.
var special = []float32{
	0, float32(math.Copysign(0, -1)), 1, -1, math.SmallestNonzeroFloat32, -math.SmallestNonzeroFloat32,
	0x1p-126, math.MaxFloat32, -math.MaxFloat32, 1.0 / 3, -2.5e-20, 12345.678,
}

// value is the fixture value number i of a message of the given step and
// batch (embedding: salt 0; gradient: salt 1).
func value(step int64, batch, i, salt int) float32 {
	return special[(i+3*batch+5*int(step)+7*salt)%len(special)]
}

// msg returns a well-formed message: rows IDs spread over the uint64 range
// and a rows×cols embedding of fixture values.
func msg(phase transport.Phase, step int64, epoch, batch, rows, cols int) *transport.Forward {
	f := &transport.Forward{Phase: phase, Step: step, Epoch: epoch, Batch: batch, Embedding: tensor.New(rows, cols)}
	for i := range rows {
		id := uint64(step)<<32 | uint64(batch)<<16 | uint64(i)
		if i%2 == 1 {
			id = ^id
		}
		f.IDs = append(f.IDs, id)
	}
	for i := range f.Embedding.Data {
		f.Embedding.Data[i] = value(step, batch, i, 0)
	}
	return f
}

// answerFor is the fixture answer to f: for a Train message a gradient of
// the embedding's shape with fixture values, for an Eval message none.
func answerFor(f *transport.Forward) *transport.Backward {
	b := &transport.Backward{Step: f.Step, Batch: f.Batch}
	if f.Phase == transport.Eval && f.Last {
		// Every combination of the verdict's two bits, over the steps.
		b.Keep, b.Stop = f.Step%2 == 0, f.Step%4 < 2
	}
	if f.Phase == transport.Train {
		b.Grad = tensor.New(f.Embedding.Rows, f.Embedding.Cols)
		for i := range b.Grad.Data {
			b.Grad.Data[i] = value(f.Step, f.Batch, i, 1)
		}
	}
	return b
}

func cloneMatrix(m *tensor.Matrix) *tensor.Matrix {
	if m == nil {
		return nil
	}
	return &tensor.Matrix{Rows: m.Rows, Cols: m.Cols, Data: slices.Clone(m.Data)}
}

func cloneForward(f *transport.Forward) *transport.Forward {
	if f == nil {
		return nil
	}
	c := *f
	c.IDs = slices.Clone(f.IDs)
	c.Embedding = cloneMatrix(f.Embedding)
	return &c
}

// sameBits reports how two matrices differ bit for bit ("" when they do
// not).
func sameBits(got, want *tensor.Matrix) string {
	switch {
	case got == nil && want == nil:
		return ""
	case got == nil || want == nil:
		return fmt.Sprintf("matrix %v, want %v", got != nil, want != nil)
	case got.Rows != want.Rows || got.Cols != want.Cols || len(got.Data) != len(want.Data):
		return fmt.Sprintf("%d×%d with %d values, want %d×%d", got.Rows, got.Cols, len(got.Data), want.Rows, want.Cols)
	}
	for i := range want.Data {
		if math.Float32bits(got.Data[i]) != math.Float32bits(want.Data[i]) {
			return fmt.Sprintf("value %d is %v (bits %#x), want %v (bits %#x)", i, got.Data[i], math.Float32bits(got.Data[i]), want.Data[i], math.Float32bits(want.Data[i]))
		}
	}
	return ""
}

// diffForward reports how got differs from want ("" when it does not).
func diffForward(got, want *transport.Forward) string {
	if got == nil || want == nil {
		return fmt.Sprintf("message %v, want %v", got, want)
	}
	if got.Phase != want.Phase || got.Step != want.Step || got.Epoch != want.Epoch || got.Batch != want.Batch || got.Last != want.Last {
		return fmt.Sprintf("header %v step %d epoch %d batch %d last %v, want %v step %d epoch %d batch %d last %v",
			got.Phase, got.Step, got.Epoch, got.Batch, got.Last, want.Phase, want.Step, want.Epoch, want.Batch, want.Last)
	}
	if !slices.Equal(got.IDs, want.IDs) {
		return fmt.Sprintf("IDs %v, want %v", got.IDs, want.IDs)
	}
	if d := sameBits(got.Embedding, want.Embedding); d != "" {
		return "embedding: " + d
	}
	return ""
}

// diffBackward reports how got differs from want ("" when it does not).
func diffBackward(got, want *transport.Backward) string {
	if got == nil {
		return "nil answer"
	}
	if got.Step != want.Step || got.Batch != want.Batch {
		return fmt.Sprintf("answer for step %d batch %d, want step %d batch %d", got.Step, got.Batch, want.Step, want.Batch)
	}
	if d := sameBits(got.Grad, want.Grad); d != "" {
		return "gradient: " + d
	}
	if got.Keep != want.Keep || got.Stop != want.Stop {
		return fmt.Sprintf("verdict keep %v stop %v, want keep %v stop %v", got.Keep, got.Stop, want.Keep, want.Stop)
	}
	return ""
}

func name(f *transport.Forward) string {
	if f == nil {
		return "nil message"
	}
	return fmt.Sprintf("%v step %d batch %d", f.Phase, f.Step, f.Batch)
}

// within runs f and fails t when it does not return within Watchdog.
func within(t *testing.T, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(Watchdog):
		t.Fatalf("%s did not return within %v", what, Watchdog)
	}
}

// server is an active party that answers every message it receives.
type server struct {
	mu   sync.Mutex           // guards got while the server runs
	got  []*transport.Forward // copies of the messages received, in order
	err  error                // the error that ended it
	done chan struct{}
}

// serve answers every message with answer(f) until Recv or Reply fails.
// Like party/active it answers from one gradient buffer that it reuses, so
// an implementation that hands the answer over by pointer is checked with
// the buffer ownership the parties rely on.
func serve(t *testing.T, a transport.ActiveConn, answer func(*transport.Forward) *transport.Backward) *server {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	s := &server{done: make(chan struct{})}
	var buf *tensor.Matrix
	go func() {
		defer close(s.done)
		for {
			f, err := a.Recv(ctx)
			if err != nil {
				s.err = err
				return
			}
			s.mu.Lock()
			s.got = append(s.got, cloneForward(f))
			s.mu.Unlock()
			if f == nil {
				s.err = errors.New("the active party received a nil message without an error")
				return
			}
			b := answer(f)
			if b != nil && b.Grad != nil {
				buf = buf.Resize(b.Grad.Rows, b.Grad.Cols)
				copy(buf.Data, b.Grad.Data)
				b = &transport.Backward{Step: b.Step, Batch: b.Batch, Grad: buf}
			}
			if err := a.Reply(ctx, b); err != nil {
				s.err = fmt.Errorf("the active party's reply to %s: %w", name(f), err)
				return
			}
		}
	}()
	return s
}

// wait waits for the server to end and returns what it received and the
// error that ended it.
func (s *server) wait(t *testing.T) ([]*transport.Forward, error) {
	t.Helper()
	select {
	case <-s.done:
	case <-time.After(Watchdog):
		t.Fatalf("the active party's Recv did not end within %v after Close", Watchdog)
	}
	return s.got, s.err
}

// exchange sends f, fails t unless the answer is answerFor(f) bit for bit,
// and returns it.
func exchange(t *testing.T, p transport.PassiveConn, f *transport.Forward) *transport.Backward {
	t.Helper()
	want := answerFor(f)
	var b *transport.Backward
	var err error
	within(t, "Exchange of "+name(f), func() { b, err = p.Exchange(context.Background(), f) })
	if err != nil {
		t.Fatalf("Exchange of %s: %v", name(f), err)
	}
	if d := diffBackward(b, want); d != "" {
		t.Fatalf("Exchange of %s: %s", name(f), d)
	}
	return b
}

// pending is an Exchange running in the background.
type pending struct {
	f   *transport.Forward
	res chan result
}

// result is what an Exchange returned.
type result struct {
	b   *transport.Backward
	err error
}

// send starts the Exchange of f in the background and receives f at the
// active end, failing t unless it arrives as sent.
func send(t *testing.T, p transport.PassiveConn, a transport.ActiveConn, f *transport.Forward) *pending {
	t.Helper()
	want := cloneForward(f)
	x := &pending{f: f, res: make(chan result, 1)}
	go func() {
		b, err := p.Exchange(context.Background(), f)
		x.res <- result{b, err}
	}()
	var got *transport.Forward
	var err error
	within(t, "Recv", func() { got, err = a.Recv(context.Background()) })
	if err != nil {
		t.Fatalf("Recv of %s: %v", name(f), err)
	}
	if d := diffForward(got, want); d != "" {
		t.Fatalf("received %s: %s", name(f), d)
	}
	return x
}

// answer waits for the Exchange's answer and returns it, failing t if
// the Exchange failed.
func (x *pending) answer(t *testing.T) *transport.Backward {
	t.Helper()
	var r result
	within(t, "Exchange of "+name(x.f), func() { r = <-x.res })
	if r.err != nil {
		t.Fatalf("Exchange of %s: %v", name(x.f), r.err)
	}
	return r.b
}

// closeAndCheck closes p and fails t unless the active party received
// exactly want, in order, and then io.EOF.
func closeAndCheck(t *testing.T, p transport.PassiveConn, s *server, want []*transport.Forward) {
	t.Helper()
	if err := p.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	got, err := s.wait(t)
	if !errors.Is(err, io.EOF) {
		t.Errorf("the active party's Recv ended with %v, want io.EOF", err)
	}
	if len(got) != len(want) {
		var names []string
		for _, f := range got {
			names = append(names, name(f))
		}
		t.Fatalf("the active party received %d messages %v, want %d", len(got), names, len(want))
	}
	for i := range want {
		if d := diffForward(got[i], want[i]); d != "" {
			t.Errorf("message %d (%s) received: %s", i, name(want[i]), d)
		}
	}
}

// testOrder sends the messages of a short run (training steps of two
// epochs, an evaluation round between them and one at the end) from a
// reused embedding buffer, as party/passive does, and checks that each
// arrives once, in order, bit for bit, passing the receiver's
// ValidateForward, and that each answer passes ValidateBackward.
func testOrder(t *testing.T, p transport.PassiveConn, a transport.ActiveConn) {
	s := serve(t, a, answerFor)
	plan := []*transport.Forward{
		msg(transport.Train, 0, 0, 0, 4, 3),
		msg(transport.Train, 1, 0, 1, 4, 3),
		msg(transport.Train, 2, 0, 2, 4, 3),
		msg(transport.Eval, 3, 0, 0, 3, 3),
		msg(transport.Eval, 3, 0, 1, 2, 3),
		msg(transport.Train, 3, 1, 0, 4, 3),
		msg(transport.Train, 4, 1, 1, 4, 3),
		msg(transport.Eval, 5, 0, 0, 5, 3),
	}
	plan[4].Last, plan[7].Last = true, true
	buf := &transport.Forward{}
	for _, f := range plan {
		// Send from one reused message and buffer.
		buf.Phase, buf.Step, buf.Epoch, buf.Batch, buf.Last = f.Phase, f.Step, f.Epoch, f.Batch, f.Last
		buf.IDs = append(buf.IDs[:0], f.IDs...)
		buf.Embedding = buf.Embedding.Resize(f.Embedding.Rows, f.Embedding.Cols)
		copy(buf.Embedding.Data, f.Embedding.Data)
		b := exchange(t, p, buf)
		if f.Phase == transport.Train {
			if err := transport.ValidateBackward(b, f.Step, f.Batch, f.Embedding.Rows, f.Embedding.Cols); err != nil {
				t.Errorf("answer to %s: %v", name(f), err)
			}
		}
	}
	closeAndCheck(t, p, s, plan)
	for i, f := range s.got {
		if err := transport.ValidateForward(f, plan[i].Phase, plan[i].Step, plan[i].Batch, plan[i].IDs, plan[i].Embedding.Cols); err != nil {
			t.Errorf("message %d as received: %v", i, err)
		}
	}
}

// testUnusual sends well-formed batches that a careless implementation
// might refuse or alter: one row, identical rows (the embeddings and
// gradients of a one-class batch can be), an all-zero gradient (signed
// zeros included), extreme IDs, a wide embedding.
func testUnusual(t *testing.T, p transport.PassiveConn, a transport.ActiveConn) {
	one := msg(transport.Train, 0, 0, 0, 1, 1)
	same := msg(transport.Train, 1, 0, 1, 4, 3)
	for r := 1; r < 4; r++ {
		copy(same.Embedding.Row(r), same.Embedding.Row(0))
	}
	same.IDs = []uint64{0, math.MaxUint64, 1 << 63, 1}
	zero := msg(transport.Train, 2, 0, 2, 3, 2)
	wide := msg(transport.Train, 3, 0, 3, 2, 300)
	evalOne := msg(transport.Eval, 4, 0, 0, 1, 300)
	evalOne.Last = true
	answers := map[int64]*transport.Backward{}
	answers[0] = answerFor(one)
	answers[1] = answerFor(same)
	for r := 1; r < 4; r++ {
		copy(answers[1].Grad.Row(r), answers[1].Grad.Row(0))
	}
	answers[2] = &transport.Backward{Step: 2, Batch: 2, Grad: tensor.New(3, 2)}
	for i := range answers[2].Grad.Data {
		if i%2 == 1 {
			answers[2].Grad.Data[i] = float32(math.Copysign(0, -1))
		}
	}
	answers[3] = answerFor(wide)
	answers[4] = answerFor(evalOne)
	s := serve(t, a, func(f *transport.Forward) *transport.Backward {
		b := answers[f.Step]
		return &transport.Backward{Step: b.Step, Batch: b.Batch, Grad: cloneMatrix(b.Grad), Keep: b.Keep, Stop: b.Stop}
	})
	plan := []*transport.Forward{one, same, zero, wide, evalOne}
	for _, f := range plan {
		var b *transport.Backward
		var err error
		within(t, "Exchange of "+name(f), func() { b, err = p.Exchange(context.Background(), f) })
		if err != nil {
			t.Fatalf("Exchange of %s: %v", name(f), err)
		}
		if d := diffBackward(b, answers[f.Step]); d != "" {
			t.Fatalf("Exchange of %s: %s", name(f), d)
		}
	}
	closeAndCheck(t, p, s, plan)
}

// testReplay re-sends messages already answered: an exact repeat of the
// last one may be answered again (a retry) or refused, an older one or
// the last one with other content must be refused, and none of them may
// reach the active party a second time.
func testReplay(t *testing.T, p transport.PassiveConn, a transport.ActiveConn) {
	s := serve(t, a, answerFor)
	plan := []*transport.Forward{
		msg(transport.Train, 0, 0, 0, 4, 3),
		msg(transport.Train, 1, 0, 1, 4, 3),
		msg(transport.Train, 2, 0, 2, 4, 3),
	}
	for _, f := range plan {
		exchange(t, p, f)
	}
	ctx := context.Background()
	within(t, "Exchange of a repeat of the last message", func() {
		b, err := p.Exchange(ctx, msg(transport.Train, 2, 0, 2, 4, 3))
		if err == nil {
			if d := diffBackward(b, answerFor(plan[2])); d != "" {
				t.Errorf("repeat of the last message answered with another answer: %s", d)
			}
		}
	})
	changed := msg(transport.Train, 2, 0, 2, 4, 3)
	changed.Embedding.Data[0] = 42
	refused := []struct {
		what string
		f    *transport.Forward
	}{
		{"an older message", msg(transport.Train, 1, 0, 1, 4, 3)},
		{"the first message", msg(transport.Train, 0, 0, 0, 4, 3)},
		{"an evaluation round of a step already trained", msg(transport.Eval, 2, 0, 0, 4, 3)},
		{"the last message with other content", changed},
	}
	_, pipelined := p.(transport.Pipeline)
	for i, r := range refused {
		within(t, "Exchange of "+r.what, func() {
			b, err := p.Exchange(ctx, r.f)
			if err != nil {
				return
			}
			// A pipelining transport may answer an exact repeat of a
			// recent message with that message's own answer (a re-send
			// after a broken stream); it never reaches the active party
			// again (closeAndCheck).
			if pipelined && i < 2 && diffBackward(b, answerFor(r.f)) == "" {
				return
			}
			t.Errorf("%s (%s) was accepted, want it refused as a replay", r.what, name(r.f))
		})
	}
	next := msg(transport.Train, 3, 1, 0, 4, 3)
	exchange(t, p, next)
	closeAndCheck(t, p, s, append(plan, next))
}

// testMalformedForward sends malformed messages: each must be refused by
// Exchange, never reach the active party, and leave the connection usable
// for the same step sent correctly.
func testMalformedForward(t *testing.T, p transport.PassiveConn, a transport.ActiveConn) {
	s := serve(t, a, answerFor)
	cases := []struct {
		name   string
		mutate func(f *transport.Forward) *transport.Forward
	}{
		{"nil message", func(*transport.Forward) *transport.Forward { return nil }},
		{"phase zero", func(f *transport.Forward) *transport.Forward { f.Phase = 0; return f }},
		{"unknown phase", func(f *transport.Forward) *transport.Forward { f.Phase = 9; return f }},
		{"negative step", func(f *transport.Forward) *transport.Forward { f.Step = -1; return f }},
		{"negative epoch", func(f *transport.Forward) *transport.Forward { f.Epoch = -1; return f }},
		{"negative batch", func(f *transport.Forward) *transport.Forward { f.Batch = -1; return f }},
		{"no embedding", func(f *transport.Forward) *transport.Forward { f.Embedding = nil; return f }},
		{"no rows", func(f *transport.Forward) *transport.Forward {
			f.Embedding, f.IDs = tensor.New(0, 3), nil
			return f
		}},
		{"no columns", func(f *transport.Forward) *transport.Forward { f.Embedding = tensor.New(4, 0); return f }},
		{"data shorter than the shape", func(f *transport.Forward) *transport.Forward {
			f.Embedding.Data = f.Embedding.Data[:11]
			return f
		}},
		{"data longer than the shape", func(f *transport.Forward) *transport.Forward {
			f.Embedding.Data = append(f.Embedding.Data, 1)
			return f
		}},
		{"fewer IDs than rows", func(f *transport.Forward) *transport.Forward { f.IDs = f.IDs[:3]; return f }},
		{"more IDs than rows", func(f *transport.Forward) *transport.Forward { f.IDs = append(f.IDs, 7); return f }},
	}
	var sent []*transport.Forward
	for i, c := range cases {
		good := msg(transport.Train, int64(i), 0, i, 4, 3)
		bad := c.mutate(msg(transport.Train, int64(i), 0, i, 4, 3))
		within(t, "Exchange of a message with "+c.name, func() {
			if _, err := p.Exchange(context.Background(), bad); err == nil {
				t.Errorf("a message with %s was accepted", c.name)
			}
		})
		exchange(t, p, good)
		sent = append(sent, good)
	}
	closeAndCheck(t, p, s, sent)
}

// testMalformedReply answers with malformed answers: Reply must refuse
// each without sending it, and the passive must get the correct answer
// given next. A Reply with nothing to answer, and a second Reply to a
// message, are refused too.
func testMalformedReply(t *testing.T, p transport.PassiveConn, a transport.ActiveConn) {
	ctx := context.Background()
	within(t, "Reply before any message", func() {
		if err := a.Reply(ctx, &transport.Backward{Step: 0, Batch: 0, Grad: tensor.New(4, 3)}); err == nil {
			t.Error("Reply before any message was accepted")
		}
	})
	cases := []struct {
		name    string
		phase   transport.Phase
		mutate  func(b *transport.Backward) *transport.Backward
		notLast bool // an evaluation message that does not end its round
	}{
		{"nil answer", transport.Train, func(*transport.Backward) *transport.Backward { return nil }, false},
		{"another step", transport.Train, func(b *transport.Backward) *transport.Backward { b.Step++; return b }, false},
		{"another batch", transport.Train, func(b *transport.Backward) *transport.Backward { b.Batch++; return b }, false},
		{"no gradient", transport.Train, func(b *transport.Backward) *transport.Backward { b.Grad = nil; return b }, false},
		{"a row too few", transport.Train, func(b *transport.Backward) *transport.Backward { b.Grad = tensor.New(3, 3); return b }, false},
		{"a column too many", transport.Train, func(b *transport.Backward) *transport.Backward { b.Grad = tensor.New(4, 4); return b }, false},
		{"data shorter than the shape", transport.Train, func(b *transport.Backward) *transport.Backward {
			b.Grad.Data = b.Grad.Data[:11]
			return b
		}, false},
		{"a gradient for an evaluation batch", transport.Eval, func(b *transport.Backward) *transport.Backward {
			b.Grad = tensor.New(4, 3)
			return b
		}, false},
		{"a verdict on a training answer", transport.Train, func(b *transport.Backward) *transport.Backward { b.Keep = true; return b }, false},
		{"a stop inside an evaluation round", transport.Eval, func(b *transport.Backward) *transport.Backward { b.Stop = true; return b }, true},
	}
	for i, c := range cases {
		f := msg(c.phase, int64(i), 0, i, 4, 3)
		if c.phase == transport.Eval {
			f.Batch, f.Last = 0, !c.notLast
		}
		x := send(t, p, a, f)
		within(t, "Reply with "+c.name, func() {
			if err := a.Reply(ctx, c.mutate(answerFor(f))); err == nil {
				t.Errorf("Reply with %s to %s was accepted", c.name, name(f))
			}
		})
		var err error
		within(t, "Reply", func() { err = a.Reply(ctx, answerFor(f)) })
		if err != nil {
			t.Fatalf("Reply to %s after a refused one: %v", name(f), err)
		}
		if d := diffBackward(x.answer(t), answerFor(f)); d != "" {
			t.Fatalf("Exchange of %s (after a refused Reply with %s): %s", name(f), c.name, d)
		}
		within(t, "a second Reply", func() {
			if err := a.Reply(ctx, answerFor(f)); err == nil {
				t.Errorf("a second Reply to %s was accepted", name(f))
			}
		})
	}
	s := serve(t, a, answerFor)
	closeAndCheck(t, p, s, nil)
}

// testNonFinite sends an answer and messages holding NaN or ±Inf. Each is
// refused by the transport (Reply or Exchange fails) or passed on for the
// receiver's ValidateBackward or ValidateForward to refuse as not finite.
func testNonFinite(t *testing.T, p transport.PassiveConn, a transport.ActiveConn) {
	bg := context.Background()
	f := msg(transport.Train, 0, 0, 0, 4, 3)
	x := send(t, p, a, f)
	bad := answerFor(f)
	bad.Grad.Data[2] = float32(math.NaN())
	var err error
	within(t, "Reply with a NaN gradient", func() { err = a.Reply(bg, bad) })
	refused := err != nil
	if refused {
		// Refused by the transport: answer correctly.
		within(t, "Reply", func() { err = a.Reply(bg, answerFor(f)) })
		if err != nil {
			t.Fatalf("Reply after a refused one: %v", err)
		}
	}
	b := x.answer(t)
	if refused { // the correct answer must arrive
		if d := diffBackward(b, answerFor(f)); d != "" {
			t.Fatalf("Exchange of %s after a refused Reply with NaN: %s", name(f), d)
		}
	} else { // passed on: the receiver's validation must refuse it
		var nf *tensor.NotFiniteError
		if err := transport.ValidateBackward(b, 0, 0, 4, 3); !errors.As(err, &nf) {
			t.Fatalf("a NaN gradient was passed on and ValidateBackward says %v, want it refused as not finite", err)
		}
	}

	s := serve(t, a, answerFor)
	values := []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1))}
	delivered := 0
	for i, v := range values {
		f := msg(transport.Train, int64(i+1), 0, i+1, 4, 3)
		f.Embedding.Data[3*i+1] = v
		within(t, fmt.Sprintf("Exchange of an embedding holding %v", v), func() {
			if _, err := p.Exchange(bg, f); err == nil {
				delivered++
			}
		})
	}
	last := msg(transport.Train, 4, 0, 4, 4, 3)
	exchange(t, p, last)
	got, err := s.wait0(t, p)
	if !errors.Is(err, io.EOF) {
		t.Errorf("the active party's Recv ended with %v, want io.EOF", err)
	}
	if len(got) != delivered+1 {
		t.Fatalf("%d messages accepted, the active party received %d", delivered+1, len(got))
	}
	if d := diffForward(got[delivered], last); d != "" {
		t.Errorf("the last message as received: %s", d)
	}
	for _, g := range got[:delivered] {
		var nf *tensor.NotFiniteError
		if err := transport.ValidateForward(g, g.Phase, g.Step, g.Batch, g.IDs, 3); !errors.As(err, &nf) {
			t.Errorf("%s holding a non-finite value was passed on and ValidateForward says %v, want it refused as not finite", name(g), err)
		}
	}
}

// wait0 closes p and waits for the server to end.
func (s *server) wait0(t *testing.T, p transport.PassiveConn) ([]*transport.Forward, error) {
	t.Helper()
	if err := p.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	return s.wait(t)
}

// testScheduleMismatch sends well-formed messages that do not fit the
// receiver's schedule (other IDs, another cut width). The transport cannot
// know the schedule: it passes them on untouched, and the receiver's
// ValidateForward refuses them exactly as it refuses the message sent;
// likewise ValidateBackward refuses an answer of another width.
func testScheduleMismatch(t *testing.T, p transport.PassiveConn, a transport.ActiveConn) {
	s := serve(t, a, answerFor)
	f := msg(transport.Train, 0, 0, 0, 4, 3)
	schedule := slices.Clone(f.IDs)
	schedule[2]++
	b := exchange(t, p, f)
	// An answer is valid until the next Exchange: validate it now.
	answerErr := transport.ValidateBackward(b, 0, 0, 4, 2)
	wide := msg(transport.Train, 1, 0, 1, 4, 5)
	exchange(t, p, wide)
	closeAndCheck(t, p, s, []*transport.Forward{f, wide})
	checks := []struct {
		what     string
		got, err error
	}{
		{"other IDs", transport.ValidateForward(s.got[0], transport.Train, 0, 0, schedule, 3),
			transport.ValidateForward(f, transport.Train, 0, 0, schedule, 3)},
		{"another cut width", transport.ValidateForward(s.got[1], transport.Train, 1, 1, wide.IDs, 3),
			transport.ValidateForward(wide, transport.Train, 1, 1, wide.IDs, 3)},
		{"an answer of another width", answerErr, transport.ValidateBackward(answerFor(f), 0, 0, 4, 2)},
	}
	for _, c := range checks {
		if c.got == nil || c.err == nil || c.got.Error() != c.err.Error() {
			t.Errorf("%s: validating what was received: %v; what was sent: %v (want the same refusal)", c.what, c.got, c.err)
		}
	}
}

// waitErr waits for a call that must end because its context ended and
// checks that its error wraps ctx's.
func waitErr(t *testing.T, what string, ctx context.Context, errc <-chan error) {
	t.Helper()
	select {
	case err := <-errc:
		if err == nil {
			t.Fatalf("%s returned nil after its context ended", what)
		}
		if !errors.Is(err, ctx.Err()) {
			t.Fatalf("%s returned %v, want an error wrapping %v", what, err, ctx.Err())
		}
	case <-time.After(Watchdog):
		t.Fatalf("%s did not return within %v after its context ended", what, Watchdog)
	}
}

// testCancelRecv ends Recv's context while it waits for a message, by
// cancellation and by a deadline.
func testCancelRecv(t *testing.T, _ transport.PassiveConn, a transport.ActiveConn) {
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { _, err := a.Recv(ctx); errc <- err }()
	time.Sleep(20 * time.Millisecond) // let Recv start waiting
	cancel()
	waitErr(t, "Recv", ctx, errc)

	ctx, cancel = context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	go func() { _, err := a.Recv(ctx); errc <- err }()
	waitErr(t, "Recv", ctx, errc)
}

// testCancelExchange ends Exchange's context while the active party holds
// the message. Exchange must return promptly with ctx's error, and the
// next message must not get the late answer to the abandoned one: it is
// refused, or it reaches the active party and gets its own answer.
func testCancelExchange(t *testing.T, p transport.PassiveConn, a transport.ActiveConn) {
	bg := context.Background()
	first := make(chan error, 1)
	go func() {
		f, err := a.Recv(bg)
		if err == nil {
			err = a.Reply(bg, answerFor(f))
		}
		first <- err
	}()
	exchange(t, p, msg(transport.Train, 0, 0, 0, 4, 3))
	if err := <-first; err != nil {
		t.Fatalf("answering the first message: %v", err)
	}
	held := msg(transport.Train, 1, 0, 1, 4, 3)
	ctx, cancel := context.WithCancel(bg)
	errc := make(chan error, 1)
	recvd := make(chan error, 1)
	go func() {
		f, err := a.Recv(bg)
		if err == nil && f.Step != held.Step {
			err = fmt.Errorf("received %s, want %s", name(f), name(held))
		}
		recvd <- err
	}()
	go func() { _, err := p.Exchange(ctx, held); errc <- err }()
	select {
	case err := <-recvd:
		if err != nil {
			t.Fatalf("Recv: %v", err)
		}
	case <-time.After(Watchdog):
		t.Fatalf("Recv did not return within %v", Watchdog)
	}
	cancel()
	waitErr(t, "Exchange", ctx, errc)

	// The active party answers late; the answer must not reach the next
	// Exchange. Reply may refuse (the sender stopped waiting) or keep it
	// for a retry.
	within(t, "Reply to an abandoned message", func() { _ = a.Reply(bg, answerFor(held)) })
	srv := serve(t, a, answerFor)
	next := msg(transport.Train, 2, 0, 2, 4, 3)
	var b *transport.Backward
	var err error
	within(t, "Exchange after an abandoned one", func() { b, err = p.Exchange(bg, next) })
	if err == nil {
		if d := diffBackward(b, answerFor(next)); d != "" {
			t.Fatalf("Exchange of %s after an abandoned one: %s", name(next), d)
		}
		closeAndCheck(t, p, srv, []*transport.Forward{next})
	}
}

// testCancelledExchange calls Exchange with a context that has already
// ended.
func testCancelledExchange(t *testing.T, p transport.PassiveConn, a transport.ActiveConn) {
	serve(t, a, answerFor)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	errc := make(chan error, 1)
	go func() { _, err := p.Exchange(ctx, msg(transport.Train, 0, 0, 0, 4, 3)); errc <- err }()
	waitErr(t, "Exchange", ctx, errc)
}

// testCancelReply calls Reply with a context that has already ended: it
// must return ctx's error and send nothing, so that a later Reply answers.
func testCancelReply(t *testing.T, p transport.PassiveConn, a transport.ActiveConn) {
	bg := context.Background()
	f := msg(transport.Train, 0, 0, 0, 4, 3)
	x := send(t, p, a, f)
	ctx, cancel := context.WithCancel(bg)
	cancel()
	errc := make(chan error, 1)
	stale := answerFor(f)
	stale.Grad.Data[0] = 99 // must never arrive
	go func() { errc <- a.Reply(ctx, stale) }()
	waitErr(t, "Reply", ctx, errc)
	within(t, "Reply", func() {
		if err := a.Reply(bg, answerFor(f)); err != nil {
			t.Errorf("Reply after one with an ended context: %v", err)
		}
	})
	if d := diffBackward(x.answer(t), answerFor(f)); d != "" {
		t.Fatalf("Exchange of %s: %s", name(f), d)
	}
}

// testClose closes after an exchange: Recv returns io.EOF, and again;
// Exchange after Close fails without reaching the active party; a second
// Close returns nil.
func testClose(t *testing.T, p transport.PassiveConn, a transport.ActiveConn) {
	s := serve(t, a, answerFor)
	f := msg(transport.Train, 0, 0, 0, 4, 3)
	exchange(t, p, f)
	closeAndCheck(t, p, s, []*transport.Forward{f})
	within(t, "Recv after Close", func() {
		if _, err := a.Recv(context.Background()); !errors.Is(err, io.EOF) {
			t.Errorf("a second Recv after Close: %v, want io.EOF", err)
		}
	})
	within(t, "Exchange after Close", func() {
		if _, err := p.Exchange(context.Background(), msg(transport.Train, 1, 0, 1, 4, 3)); err == nil {
			t.Error("Exchange after Close succeeded")
		}
	})
	within(t, "Recv after Close", func() {
		if f, err := a.Recv(context.Background()); !errors.Is(err, io.EOF) {
			t.Errorf("Recv after an Exchange after Close: %v, %v; want io.EOF", f, err)
		}
	})
	within(t, "a second Close", func() {
		if err := p.Close(); err != nil {
			t.Errorf("a second Close: %v", err)
		}
	})
}

// testCloseAfterRefusal closes after the last messages sent were refused
// as malformed: the active party's Recv returns io.EOF.
func testCloseAfterRefusal(t *testing.T, p transport.PassiveConn, a transport.ActiveConn) {
	s := serve(t, a, answerFor)
	f := msg(transport.Train, 0, 0, 0, 4, 3)
	exchange(t, p, f)
	bad := []*transport.Forward{msg(transport.Train, 1, -1, 1, 4, 3), msg(transport.Train, 1, 0, 1, 4, 3)}
	bad[1].Embedding = nil
	for _, b := range bad {
		within(t, "Exchange of a malformed message", func() {
			if _, err := p.Exchange(context.Background(), b); err == nil {
				t.Errorf("a malformed message (%s epoch %d) was accepted", name(b), b.Epoch)
			}
		})
	}
	closeAndCheck(t, p, s, []*transport.Forward{f})
}

// testCloseUnused closes a connection that carried no message: the
// active party's Recv returns io.EOF.
func testCloseUnused(t *testing.T, p transport.PassiveConn, a transport.ActiveConn) {
	s := serve(t, a, answerFor)
	closeAndCheck(t, p, s, nil)
}
