package step

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/splitguard/splitguard/data"
	"github.com/splitguard/splitguard/party/active"
	"github.com/splitguard/splitguard/party/passive"
	"github.com/splitguard/splitguard/schedule"
	"github.com/splitguard/splitguard/tensor"
	"github.com/splitguard/splitguard/transport"
	"github.com/splitguard/splitguard/transport/grpcnet"
	"github.com/splitguard/splitguard/transport/inproc"
	"github.com/splitguard/splitguard/transport/linkplan"
	"github.com/splitguard/splitguard/transport/wire"
)

// pairFunc connects a passive party to an active one: the two ends and a
// function that releases what the connection holds.
type pairFunc func(ctx context.Context, enc wire.Encodings) (transport.PassiveConn, transport.ActiveConn, func(), error)

// inprocPair is the in-memory transport.
func inprocPair(context.Context, wire.Encodings) (transport.PassiveConn, transport.ActiveConn, func(), error) {
	p, a := inproc.Pipe()
	return p, a, func() {}, nil
}

// runTimes are the per-step times of a timed run, in nanoseconds, in
// step order.
type runTimes struct {
	conn *timedConn
	// active is the active party's TrainStep, per step.
	active []float64
}

// costs are the medians of the timed steps (after spec.Warmup) and the
// mean bytes per step; the overhead is left to the caller.
func (r *runTimes) costs(spec LinkSpec) linkplan.Costs {
	t, n := r.conn, int64(len(r.conn.exchange))
	return linkplan.Costs{
		Passive:  time.Duration(Median(clone(t.passive[spec.Warmup:]))),
		Active:   time.Duration(Median(clone(r.active[spec.Warmup : spec.Warmup+spec.Steps]))),
		Forward:  t.fwd / n,
		Backward: t.bwd / n,
	}
}

// Split are the medians of a timed run's steps (after the warm-up): the
// whole step (from one exchange's start to the next's), the passive's
// compute in it, the active's compute (its TrainStep) and the rest of
// the exchange (the passive's wait less the active's compute: round
// trip, transfers and the transport's own cost).
type Split struct {
	Step, Passive, Active, Link time.Duration
}

// split returns the medians of r's timed steps.
func (r *runTimes) split(spec LinkSpec) Split {
	t := r.conn
	n := spec.Steps
	step, rest := make([]float64, n), make([]float64, n)
	for i := range n {
		j := spec.Warmup + i
		step[i] = t.exchange[j] + t.passive[j]
		rest[i] = t.exchange[j] - r.active[j]
	}
	return Split{
		Step:    time.Duration(Median(step)),
		Passive: time.Duration(Median(clone(t.passive[spec.Warmup:]))),
		Active:  time.Duration(Median(clone(r.active[spec.Warmup : spec.Warmup+n]))),
		Link:    time.Duration(Median(rest)),
	}
}

func clone(v []float64) []float64 { return append([]float64(nil), v...) }

// timedHandler times the active party's training steps.
type timedHandler struct {
	a     *active.Active
	mu    sync.Mutex
	times []float64
}

func (h *timedHandler) TrainStep(f *transport.Forward) (*transport.Backward, error) {
	start := time.Now()
	b, err := h.a.TrainStep(f)
	h.mu.Lock()
	h.times = append(h.times, float64(time.Since(start).Nanoseconds()))
	h.mu.Unlock()
	return b, err
}

func (h *timedHandler) EvalBatch(f *transport.Forward) (*transport.Backward, error) {
	return h.a.EvalBatch(f)
}

// timedRun trains spec.Warmup + spec.Steps + 1 steps of the run
// spec.Config describes in encodings enc, the two parties connected by
// pair, and returns the steps' times.
func timedRun(ctx context.Context, spec LinkSpec, enc wire.Encodings, train *data.Dataset, pair pairFunc) (*runTimes, error) {
	cfg := *spec.Config
	total := spec.Warmup + spec.Steps + 1
	sched, err := schedule.New(len(train.IDs), cfg.Batch, cfg.Seed)
	if err != nil {
		return nil, err
	}
	epochs := (total + sched.BatchesPerEpoch() - 1) / sched.BatchesPerEpoch()
	bottom, top, wide, err := cfg.BuildModels(train.X)
	if err != nil {
		return nil, err
	}
	def, err := cfg.BuildDefences(train)
	if err != nil {
		return nil, err
	}
	act, err := active.New(top, train, train, sched, bottom.CutDim(), active.Config{
		Protector: def.Protector, Loss: def.Loss, TrainLabels: def.TrainLabels, TrainTargets: def.TrainTargets,
		Wide: wide, Seed: cfg.Seed, WireGradient: enc.Gradient,
		// Error feedback where the configuration asks for it and the
		// gradients are rounded (f32 has nothing to feed back).
		WireFeedback: cfg.WireFeedback && enc.Gradient != wire.F32,
	})
	if err != nil {
		return nil, err
	}
	pas, err := passive.New(bottom, passive.Split{IDs: train.IDs, X: train.X}, passive.Split{},
		sched, passive.Config{Epochs: epochs, MaxSteps: int64(total), WireEmbedding: enc.Embedding})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	pConn, aConn, release, err := pair(ctx, enc)
	if err != nil {
		return nil, err
	}
	defer release()
	t := &timedConn{conn: pConn, enc: enc}
	h := &timedHandler{a: act}
	served := make(chan error, 1)
	go func() { served <- active.Serve(ctx, aConn, h) }()
	if err := pas.Run(ctx, t); err != nil {
		return nil, err
	}
	if err := t.Close(); err != nil {
		return nil, err
	}
	if err := <-served; err != nil {
		return nil, err
	}
	if len(t.exchange) != total || len(h.times) != total {
		return nil, fmt.Errorf("%d training exchanges and %d active steps, want %d", len(t.exchange), len(h.times), total)
	}
	return &runTimes{conn: t, active: h.times}, nil
}

// timedConn is a passive connection that times each training exchange
// and the time between an answer and the next exchange (the passive's
// compute), counts the bytes grpcnet carries for it (grpcnet.WireBytes,
// outside the times), and keeps a copy of the last exchange's messages.
type timedConn struct {
	conn              transport.PassiveConn
	enc               wire.Encodings
	exchange, passive []float64 // nanoseconds
	answered          time.Time // when the last answer was handed back (zero: none yet)
	fwd, bwd          int64
	lastF             transport.Forward
	lastB             transport.Backward
}

func (t *timedConn) Exchange(ctx context.Context, f *transport.Forward) (*transport.Backward, error) {
	if f.Phase != transport.Train {
		return t.conn.Exchange(ctx, f)
	}
	start := time.Now()
	if !t.answered.IsZero() {
		t.passive = append(t.passive, float64(start.Sub(t.answered).Nanoseconds()))
	}
	b, err := t.conn.Exchange(ctx, f)
	if err != nil {
		return b, err
	}
	t.exchange = append(t.exchange, float64(time.Since(start).Nanoseconds()))
	nf, nb, err := grpcnet.WireBytes(f, b, t.enc)
	if err != nil {
		return nil, err
	}
	t.fwd, t.bwd = t.fwd+nf, t.bwd+nb
	// Copies into buffers reused from step to step.
	ids, emb, grad := t.lastF.IDs, t.lastF.Embedding, t.lastB.Grad
	t.lastF, t.lastB = *f, *b
	t.lastF.IDs = append(ids[:0], f.IDs...)
	t.lastF.Embedding = copyMatrix(emb, f.Embedding)
	t.lastB.Grad = copyMatrix(grad, b.Grad)
	t.answered = time.Now()
	return b, nil
}

func (t *timedConn) Close() error { return t.conn.Close() }

// copyMatrix copies src into dst (resized; a new matrix when nil) and
// returns it.
func copyMatrix(dst, src *tensor.Matrix) *tensor.Matrix {
	dst = dst.Resize(src.Rows, src.Cols)
	copy(dst.Data, src.Data)
	return dst
}
