package step

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
	"unsafe"

	"github.com/splitguard/splitguard/data"
	"github.com/splitguard/splitguard/model"
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

// pairFunc connects a passive party to an active one, for a pipeline of
// depth training messages in flight (0: the synchronous protocol): the
// two ends and a function that releases what the connection holds.
type pairFunc func(ctx context.Context, enc wire.Encodings, depth int) (transport.PassiveConn, transport.ActiveConn, func(), error)

// inprocPair is the in-memory transport.
func inprocPair(context.Context, wire.Encodings, int) (transport.PassiveConn, transport.ActiveConn, func(), error) {
	p, a := inproc.Pipe()
	return p, a, func() {}, nil
}

// runTimes are the per-step times of a timed run, in nanoseconds, in
// step order.
type runTimes struct {
	conn  *timedConn
	sched linkplan.Schedule
	// active is the active party's TrainStep, per step (its local steps
	// included).
	active []float64
	// activeCPU is the processor time of each of those steps.
	activeCPU []float64
	// recompute is the median time of a forward of the bottom on one
	// batch in training mode, recomputeCPU its mean processor time.
	recompute, recomputeCPU time.Duration
	// cpu says the processor times were measured (processCPU).
	cpu bool
}

// costs are the medians of the timed steps (after spec.Warmup) and the
// mean bytes per step; the overhead is left to the caller.
func (r *runTimes) costs(spec LinkSpec) linkplan.Costs {
	t, n := r.conn, int64(len(r.conn.wait))
	c := linkplan.Costs{
		Passive:   time.Duration(Median(clone(t.busy[spec.Warmup:]))),
		Active:    time.Duration(Median(clone(r.active[spec.Warmup : spec.Warmup+spec.Steps]))),
		Recompute: r.recompute,
		Forward:   t.fwd / n,
		Backward:  t.bwd / n,
	}
	if r.cpu {
		c.CPU.Passive = time.Duration(mean(t.busyCPU[spec.Warmup:]))
		c.CPU.Active = time.Duration(mean(r.activeCPU[spec.Warmup : spec.Warmup+spec.Steps]))
		c.CPU.Recompute = r.recomputeCPU
	}
	return c
}

// mean is the mean of v (0 for none).
func mean(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := 0.0
	for _, x := range v {
		s += x
	}
	return s / float64(len(v))
}

// Split are the medians of a timed run's steps (after the warm-up): the
// whole step, the passive's compute in it (from an answer to the moment
// it next waits for one: applying the gradient, its local steps and the
// forwards it sends), the active's compute (its TrainStep, local steps
// included) and the link's share. In the synchronous protocol the step
// is the median time from one answer to the next and the link's share
// the passive's wait less the active's compute (round trip, transfers
// and the transport's own cost). With staleness k > 0 answers come in
// bunches (k+1 batches share a round), so the step is the median over
// the runs of k+1 consecutive answers of their mean spacing, and the
// link's share is the passive's wait for an answer. CPU is the
// process's processor time per step over the timed steps (both parties,
// the transport and, over an emulated link, the proxy; 0 where the
// system does not give processor time): what a step took of the cores
// they share.
type Split struct {
	Step, Passive, Active, Link time.Duration
	CPU                         time.Duration
}

// split returns the medians of r's timed steps.
func (r *runTimes) split(spec LinkSpec) Split {
	t := r.conn
	n := spec.Steps
	link := make([]float64, n)
	for i := range n {
		j := spec.Warmup + i
		link[i] = t.wait[j]
		if r.sched.Staleness == 0 {
			link[i] -= r.active[j]
		}
	}
	at := t.answerCPU[spec.Warmup : spec.Warmup+n+1]
	return Split{
		CPU:     (at[n] - at[0]) / time.Duration(n),
		Step:    time.Duration(Median(meanSpacings(t.answers[spec.Warmup:spec.Warmup+n+1], r.sched.Staleness+1))),
		Passive: time.Duration(Median(clone(t.busy[spec.Warmup:]))),
		Active:  time.Duration(Median(clone(r.active[spec.Warmup : spec.Warmup+n]))),
		Link:    time.Duration(Median(link)),
	}
}

// meanSpacings returns, for each run of w consecutive gaps between the
// times at (w capped at the gaps there are), the mean gap in
// nanoseconds.
func meanSpacings(at []time.Time, w int) []float64 {
	w = max(1, min(w, len(at)-1))
	var out []float64
	for i := 0; i+w < len(at); i++ {
		out = append(out, float64(at[i+w].Sub(at[i]).Nanoseconds())/float64(w))
	}
	return out
}

func clone(v []float64) []float64 { return append([]float64(nil), v...) }

// timedHandler times the active party's training steps, wall and
// processor time.
type timedHandler struct {
	a          *active.Active
	mu         sync.Mutex
	times, cpu []float64
}

func (h *timedHandler) TrainStep(f *transport.Forward) (*transport.Backward, error) {
	start, cpu0 := time.Now(), cpuNow()
	b, err := h.a.TrainStep(f)
	d, cpu := time.Since(start), cpuNow()-cpu0
	h.mu.Lock()
	h.times = append(h.times, float64(d.Nanoseconds()))
	h.cpu = append(h.cpu, float64(cpu.Nanoseconds()))
	h.mu.Unlock()
	return b, err
}

func (h *timedHandler) EvalBatch(f *transport.Forward) (*transport.Backward, error) {
	return h.a.EvalBatch(f)
}

// timedRun trains spec.Warmup + spec.Steps + 1 steps of the run
// spec.Config describes in encodings enc under schedule sc (staleness,
// local steps), the two parties connected by pair, and returns the
// steps' times.
func timedRun(ctx context.Context, spec LinkSpec, enc wire.Encodings, sc linkplan.Schedule, train *data.Dataset, pair pairFunc) (*runTimes, error) {
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
		LocalSteps:   sc.LocalSteps,
	})
	if err != nil {
		return nil, err
	}
	pas, err := passive.New(bottom, passive.Split{IDs: train.IDs, X: train.X}, passive.Split{},
		sched, passive.Config{Epochs: epochs, MaxSteps: int64(total), WireEmbedding: enc.Embedding,
			Staleness: sc.Staleness, LocalSteps: sc.LocalSteps})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	depth := 0
	if sc.Staleness > 0 {
		depth = sc.Staleness + 1
	}
	pConn, aConn, release, err := pair(ctx, enc, depth)
	if err != nil {
		return nil, err
	}
	defer release()
	t := &timedConn{conn: pConn, enc: enc, timed: spec.timed, idle: spec.idle, warmup: spec.Warmup, steps: spec.Steps}
	defer t.endTimed()
	defer t.release()
	t.reserve(total, min(cfg.Batch, len(train.IDs)), bottom.CutDim())
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
	if len(t.wait) != total || len(h.times) != total {
		return nil, fmt.Errorf("%d training exchanges and %d active steps, want %d", len(t.wait), len(h.times), total)
	}
	if err := t.countBytes(); err != nil {
		return nil, err
	}
	rows := make([]int, min(cfg.Batch, len(train.IDs)))
	for i := range rows {
		rows[i] = i
	}
	re, reCPU, err := timeForward(bottom, train.X, rows, spec.Steps)
	if err != nil {
		return nil, err
	}
	_, measured := processCPU()
	return &runTimes{conn: t, sched: sc, active: h.times, activeCPU: h.cpu, recompute: re, recomputeCPU: reCPU, cpu: measured}, nil
}

// timedConn is a passive connection that times each training exchange
// (synchronous, Exchange, or pipelined, Send and Receive): when each
// answer was handed back, the passive's wait for it, and the time from
// an answer to the passive's next wait (its compute). It keeps a copy of
// every training exchange's messages, whose bytes as grpcnet carries
// them countBytes counts after the run (encoding them inside the timed
// loop would add the encoding's time to every step).
type timedConn struct {
	conn       transport.PassiveConn
	enc        wire.Encodings
	answers    []time.Time          // when each training answer was handed back
	wait, busy []float64            // nanoseconds: the wait for each answer; from an answer to the next wait
	busyCPU    []float64            // nanoseconds: the processor time of each busy interval
	answerCPU  []time.Duration      // the process's processor time at each answer
	fwd, bwd   int64                // bytes, set by countBytes
	sent       []*transport.Forward // pipelined messages not yet answered, oldest first
	kept       []keptExchange
	unmap      func()            // unmaps the memory of kept's copies (reserve)
	lastF      transport.Forward // the last exchange's messages (set by countBytes)
	lastB      transport.Backward
	// timed is LinkSpec.timed, called at the answers that begin and end
	// the timed steps (after warmup answers, steps of them); inTimed
	// says it was called with true and not yet with false.
	timed         func(begin bool)
	warmup, steps int
	inTimed       bool
	// idle is LinkSpec.idle; idleAt its values at the answers that begin
	// and end the timed steps.
	idle   func() (up, down time.Duration)
	idleAt [2][2]time.Duration
}

// endTimed tells timed that the timed steps ended, if it was told they
// began and not yet that they ended.
func (t *timedConn) endTimed() {
	if t.inTimed {
		t.inTimed = false
		t.timed(false)
	}
}

// keptExchange is a copy of one training exchange's messages.
type keptExchange struct {
	f transport.Forward
	b transport.Backward
}

// waiting notes the start of a wait for an answer at start.
func (t *timedConn) waiting(start time.Time) {
	if n := len(t.answers); n > 0 {
		t.busy = append(t.busy, float64(start.Sub(t.answers[n-1]).Nanoseconds()))
		t.busyCPU = append(t.busyCPU, float64((cpuNow() - t.answerCPU[n-1]).Nanoseconds()))
	}
}

// answered notes the answer b to f, waited for since start, and keeps a
// copy of both (in the room reserve made).
func (t *timedConn) answered(start time.Time, f *transport.Forward, b *transport.Backward) {
	now := time.Now()
	t.answerCPU = append(t.answerCPU, cpuNow())
	t.wait = append(t.wait, float64(now.Sub(start).Nanoseconds()))
	t.answers = append(t.answers, now)
	switch len(t.answers) {
	case t.warmup + 1:
		if t.idle != nil {
			t.idleAt[0][0], t.idleAt[0][1] = t.idle()
		}
		if t.timed != nil {
			t.inTimed = true
			t.timed(true)
		}
	case t.warmup + t.steps + 1:
		if t.idle != nil {
			t.idleAt[1][0], t.idleAt[1][1] = t.idle()
		}
		t.endTimed()
	}
	if len(t.kept) == cap(t.kept) {
		t.kept = append(t.kept, keptExchange{})
	}
	t.kept = t.kept[:len(t.kept)+1]
	k := &t.kept[len(t.kept)-1]
	ids, emb, grad := k.f.IDs, k.f.Embedding, k.b.Grad
	k.f, k.b = *f, *b
	k.f.IDs = append(ids[:0], f.IDs...)
	k.f.Embedding = copyMatrix(emb, f.Embedding)
	k.b.Grad = copyMatrix(grad, b.Grad)
}

// reserve makes room for the copies of n exchanges of rows × cols
// messages before the timed steps, its memory written once and outside
// the Go heap (mapMemory). Copies into new memory inside the steps put a
// page fault per 4 KiB on the passive's cycle (about 3 ms a step for the
// 1 MiB of a 1024 × 128 exchange on the shared 2-core machine, 11% of the
// run's processor time), and the same copies on the heap (100 MiB for
// 100 steps) doubled the heap's goal: the collector then did not run
// during the timed steps, so everything the run allocated came from
// memory never touched before, 290–390 page faults (5–7 ms of system
// time) per step on the same machine, where a long run reuses the memory
// each collection frees. Neither is a cost any party has. Where the
// mapping fails, answered copies onto the heap as the exchanges come.
func (t *timedConn) reserve(n, rows, cols int) {
	ids, vals := n*rows, 2*n*rows*cols
	mem, unmap, err := mapMemory(8*ids + 4*vals)
	if err != nil {
		return
	}
	t.unmap = unmap
	idMem := unsafe.Slice((*uint64)(unsafe.Pointer(unsafe.SliceData(mem))), ids)
	valMem := unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(mem[8*ids:]))), vals)
	clear(idMem)
	clear(valMem)
	t.kept = make([]keptExchange, n)
	for i := range t.kept {
		k := &t.kept[i]
		k.f.IDs = idMem[i*rows : i*rows : (i+1)*rows]
		e, g := valMem[2*i*rows*cols:], valMem[(2*i+1)*rows*cols:]
		k.f.Embedding = &tensor.Matrix{Rows: rows, Cols: cols, Data: e[: rows*cols : rows*cols]}
		k.b.Grad = &tensor.Matrix{Rows: rows, Cols: cols, Data: g[: rows*cols : rows*cols]}
	}
	t.kept = t.kept[:0]
}

// release drops the copies reserve made (unmapping their memory).
func (t *timedConn) release() {
	t.kept = nil
	if t.unmap != nil {
		t.unmap()
		t.unmap = nil
	}
}

// countBytes sums the bytes grpcnet carries for the kept exchanges
// (grpcnet.WireBytes), keeps a copy of the last exchange's messages on
// the heap and releases the rest.
func (t *timedConn) countBytes() error {
	defer t.release()
	for i := range t.kept {
		k := &t.kept[i]
		nf, nb, err := grpcnet.WireBytes(&k.f, &k.b, t.enc)
		if err != nil {
			return err
		}
		t.fwd, t.bwd = t.fwd+nf, t.bwd+nb
	}
	if n := len(t.kept); n > 0 {
		k := &t.kept[n-1]
		t.lastF, t.lastB = k.f, k.b
		t.lastF.IDs = append([]uint64(nil), k.f.IDs...)
		t.lastF.Embedding = copyMatrix(nil, k.f.Embedding)
		t.lastB.Grad = copyMatrix(nil, k.b.Grad)
	}
	return nil
}

func (t *timedConn) Exchange(ctx context.Context, f *transport.Forward) (*transport.Backward, error) {
	if f.Phase != transport.Train {
		return t.conn.Exchange(ctx, f)
	}
	start := time.Now()
	t.waiting(start)
	b, err := t.conn.Exchange(ctx, f)
	if err != nil {
		return b, err
	}
	t.answered(start, f, b)
	return b, nil
}

// pipeline is the connection's Pipeline, or an error when it has none.
func (t *timedConn) pipeline() (transport.Pipeline, error) {
	return transport.AsPipeline(t.conn, len(t.sent))
}

// Send sends f pipelined (transport.Pipeline); it stays valid until its
// answer is received, so the connection keeps f itself.
func (t *timedConn) Send(ctx context.Context, f *transport.Forward) error {
	pl, err := t.pipeline()
	if err != nil {
		return err
	}
	if err := pl.Send(ctx, f); err != nil {
		return err
	}
	t.sent = append(t.sent, f)
	return nil
}

// Receive waits for the answer to the oldest message sent.
func (t *timedConn) Receive(ctx context.Context) (*transport.Backward, error) {
	pl, err := t.pipeline()
	if err != nil {
		return nil, err
	}
	if len(t.sent) == 0 {
		return nil, errors.New("step: receive with no message in flight")
	}
	start := time.Now()
	t.waiting(start)
	b, err := pl.Receive(ctx)
	if err != nil {
		return nil, err
	}
	f := t.sent[0]
	t.sent = t.sent[1:]
	t.answered(start, f, b)
	return b, nil
}

// InFlight is the number of pipelined messages not yet answered.
func (t *timedConn) InFlight() int { return len(t.sent) }

func (t *timedConn) Close() error { return t.conn.Close() }

// copyMatrix copies src into dst (resized; a new matrix when nil) and
// returns it.
func copyMatrix(dst, src *tensor.Matrix) *tensor.Matrix {
	dst = dst.Resize(src.Rows, src.Cols)
	copy(dst.Data, src.Data)
	return dst
}

// timeForward returns the median time of n forwards of bottom on the
// given rows of x in training mode, as the passive recomputes a batch's
// embedding under staleness (the rows gathered each time, as there), and
// their mean processor time.
func timeForward(bottom model.Bottom, x *data.Features, rows []int, n int) (wall, cpu time.Duration, err error) {
	if m, ok := bottom.(interface{ SetTraining(bool) }); ok {
		m.SetTraining(true)
		defer m.SetTraining(false)
	}
	var b data.Batch
	times := make([]float64, n)
	cpu0 := cpuNow()
	for i := range times {
		start := time.Now()
		x.Gather(rows, &b)
		if _, err := bottom.Forward(&b); err != nil {
			return 0, 0, fmt.Errorf("timing the bottom's forward: %w", err)
		}
		times[i] = float64(time.Since(start).Nanoseconds())
	}
	return time.Duration(Median(times)), (cpuNow() - cpu0) / time.Duration(n), nil
}
