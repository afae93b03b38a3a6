// Package passive is the passive (non-label) party: it holds the features
// and the bottom model f, sends cut-layer embeddings e = f(X) and applies
// the gradient it gets back. Nothing in this package or below it can read
// a label: it is built from data.Features and example IDs only, and the
// only thing it receives is the protected gradient g̃.
package passive

import (
	"context"
	"fmt"
	"time"

	"github.com/splitguard/splitguard/data"
	"github.com/splitguard/splitguard/model"
	"github.com/splitguard/splitguard/schedule"
	"github.com/splitguard/splitguard/tensor"
	"github.com/splitguard/splitguard/transport"
	"github.com/splitguard/splitguard/transport/wire"
)

// Split is the passive party's share of one split of the data: example IDs
// and features, row-aligned.
type Split struct {
	IDs []uint64
	X   *data.Features
}

// Config controls the passive party's training loop.
type Config struct {
	Epochs int
	// MaxSteps, when positive, ends training after that many steps.
	MaxSteps int64
	// EvalEvery runs a test evaluation after every EvalEvery training
	// steps (0: only at the end). A final evaluation always runs.
	EvalEvery int
	// EvalBatch is the number of test rows per evaluation message.
	EvalBatch int
	// Observer, when set, is called after every training batch's backward
	// pass and before the bottom model's update.
	Observer func(*Observation) error
	// EvalObserver, when set, is called after every evaluation round,
	// the bottom model as that round used it (a passive party auditing
	// its own features reads it there). An error ends Run.
	EvalObserver func(step int64) error
	// Stop, when set, is asked after every evaluation during training
	// whether to end training there (early stopping); the evaluation just
	// made is then the last. Training also ends there when the active
	// party's answer to the round says so (transport.Backward.Stop).
	Stop func(step int64) bool
	// Kept, when set, is called after an evaluation round whose last
	// answer says that the active party keeps this evaluation's models
	// (transport.Backward.Keep), with the steps done: the bottom model as
	// it is now is the one to keep. An error ends the run.
	Kept func(step int64) error
	// AfterStep, when set, is called after every training step and the
	// evaluation that follows it, if any, with the number of steps done
	// (a networked run checkpoints here). An error ends Run.
	AfterStep func(ctx context.Context, step int64) error
	// WireEmbedding is the encoding the embeddings are sent in: every
	// embedding (training and evaluation) is rounded to its values
	// before it is sent (wire.Encoding.Round; F32, the zero value, sends
	// them as they are). The bottom model keeps its own unrounded output.
	WireEmbedding wire.Encoding
	// Send, when set, replaces every embedding before it is sent (after
	// the wire rounding): a free-riding party (package integrity's
	// Tamper) sends what it returns. The bottom model still learns from
	// the gradient it gets back.
	Send Sender
	// Staleness k > 0 pipelines the training messages (see pipeline.go):
	// the embeddings of batches t+1, …, t+k are sent while the gradient
	// of batch t is in flight, so the forward of batch s uses the
	// parameters updated by batches 0, …, s−k−1 only. The pipeline is
	// drained before every evaluation and every DrainEvery steps. 0 is
	// the exact protocol. The connection must be a transport.Pipeline.
	Staleness int
	// StalenessPrediction F > 0 forwards each batch sent ahead with the
	// bottom's weights extrapolated along its last update (linear weight
	// prediction; see pipeline.go): F·L·Q times the last Step's change,
	// L being the gradients not yet applied. The bottom must be a
	// model.Extrapolator. 0, the default, forwards with the current
	// weights. Staleness > 0 only.
	StalenessPrediction float64
	// DrainEvery > 0 drains the pipeline every DrainEvery steps as well
	// (a networked run's checkpoint period), so that a checkpoint holds
	// no batch in flight.
	DrainEvery int
	// LocalSteps Q > 1 takes Q−1 further updates of the bottom after each
	// gradient is applied, on the cached gradient with the embedding
	// recomputed at the current parameters (FedBCD's local updates); 0
	// and 1 take none.
	LocalSteps int
	// LocalCache W > 1 keeps the last W batches' received gradients and
	// draws each local step's batch from them, least used first
	// (CELU-VFL's workset and uniform sampling; see celu.go); 0 and 1
	// keep the batch just exchanged only (FedBCD). Staleness 0 only.
	LocalCache int
	// LocalWeightThreshold, when set, weights each row of a local step
	// by CELU-VFL's instance weight: the cosine similarity of the fresh
	// and the sent embedding, 0 under the threshold. Staleness 0 only.
	LocalWeightThreshold *float64
	// Check, when set, is shown every training gradient received (after
	// its validation, before it is applied); an error refuses it and
	// ends Run (package integrity's HijackWatch).
	Check func(step int64, g *tensor.Matrix) error
	// Cheat, when set, changes what a training step computes from, sends
	// and learns from (package integrity's Backdoor); evaluations stay
	// honest.
	Cheat Cheat
}

// Cheat is a passive party that departs from the protocol in training:
// it may change a batch's features before the forward pass, the
// embedding it sends and the gradient it learns from (ids: the batch's
// example IDs; results valid until the next call, inputs unchanged).
type Cheat interface {
	Features(step int64, ids []uint64, b *data.Batch) error
	Send(step int64, ids []uint64, e *tensor.Matrix) (*tensor.Matrix, error)
	Gradient(step int64, ids []uint64, g *tensor.Matrix) (*tensor.Matrix, error)
}

// Sender replaces the embedding of a message before it is sent; the
// result must have e's shape and be valid until the next call.
type Sender interface {
	Send(step int64, e *tensor.Matrix, train bool) (*tensor.Matrix, error)
}

// Observation is what the passive party holds after backpropagating one
// batch's gradient, before it updates its parameters: everything a
// passive-side attacker could look at.
type Observation struct {
	Step         int64
	Epoch, Batch int
	IDs          []uint64
	Rows         []int // rows of the training split
	// Outputs[i] is passive layer i's output (last: the cut embedding as
	// sent, rounded to Config.WireEmbedding).
	Outputs []*tensor.Matrix
	// Grads[i] is the gradient with respect to Outputs[i] obtained by
	// backpropagating the received g̃ (last: g̃ itself).
	Grads []*tensor.Matrix
}

// Passive is the passive party.
type Passive struct {
	bottom      model.Bottom
	train, test Split
	sched       *schedule.Schedule
	cfg         Config

	step     int64
	lastEval int64 // steps done at the last evaluation, -1 before the first
	stopped  bool  // training was ended early by Config.Stop or the active party
	stopAsk  bool  // the last evaluation round's answer asked to stop
	order    []int
	batch    data.Batch
	celu     *celu // CELU-VFL's workset, or nil (Config.LocalCache, LocalWeightThreshold)
	ids      []uint64
	evalBuf  [2]tensor.Matrix // evaluation messages' embeddings, two in turn
	sent     *tensor.Matrix   // the rounded training embedding sent (WireEmbedding other than F32)
	outs     []*tensor.Matrix // the observation's outputs, the last one replaced by sent
	evalRows []int
	// timing of the training steps this party ran (see Timing).
	timing Timing
	// the pipelined schedule (Config.Staleness > 0): the batches in
	// flight by step modulo k+1, the next step to send, and the compute
	// time of the last send.
	ob          Observation // the step's observation, reused
	slots       []slot
	next        int64
	lastCompute time.Duration
	// stepped: the bottom has stepped since the pipeline was last empty
	// (linear weight prediction extrapolates only then).
	stepped bool
}

// Timing splits the training steps a party ran (since it was made or
// restored) into its own compute and the wait for the active party's
// answer: the active's compute, the round trip and the transfer both ways.
// A run whose Exchange dominates is bound by its peer or its link; one
// whose Compute dominates, by this party.
type Timing struct {
	Steps             int64
	Compute, Exchange time.Duration
}

// Timing returns the split of the training steps run so far.
func (p *Passive) Timing() Timing { return p.timing }

// New returns a passive party training bottom on train, evaluating on test,
// in the order sched gives.
func New(bottom model.Bottom, train, test Split, sched *schedule.Schedule, cfg Config) (*Passive, error) {
	if len(train.IDs) != train.X.Rows || (test.X != nil && len(test.IDs) != test.X.Rows) {
		return nil, fmt.Errorf("passive: IDs and feature rows differ (train %d/%d)", len(train.IDs), train.X.Rows)
	}
	if sched.N != train.X.Rows {
		return nil, fmt.Errorf("passive: schedule covers %d examples, training split has %d", sched.N, train.X.Rows)
	}
	if cfg.Epochs < 1 {
		return nil, fmt.Errorf("passive: %d epochs, want at least 1", cfg.Epochs)
	}
	if cfg.EvalBatch <= 0 {
		cfg.EvalBatch = 8192
	}
	if err := checkOverlap(cfg); err != nil {
		return nil, err
	}
	cl, err := newCELU(cfg)
	if err != nil {
		return nil, err
	}
	if cfg.StalenessPrediction > 0 {
		ex, ok := bottom.(model.Extrapolator)
		if !ok {
			return nil, fmt.Errorf("passive: staleness prediction needs a bottom that can extrapolate its weights (the tabular MLP); %T cannot", bottom)
		}
		ex.TrackUpdates()
	}
	return &Passive{bottom: bottom, train: train, test: test, sched: sched, cfg: cfg, lastEval: -1, celu: cl}, nil
}

// Step is the number of training steps done.
func (p *Passive) Step() int64 { return p.step }

// Stopped reports whether training was ended early by Config.Stop.
func (p *Passive) Stopped() bool { return p.stopped }

// TotalSteps is the number of training steps the run takes.
func (p *Passive) TotalSteps() int64 {
	n := int64(p.cfg.Epochs) * int64(p.sched.BatchesPerEpoch())
	if p.cfg.MaxSteps > 0 {
		n = min(n, p.cfg.MaxSteps)
	}
	return n
}

// Run trains for the configured epochs through conn, evaluating on the
// test split as configured, and closes conn when done.
func (p *Passive) Run(ctx context.Context, conn transport.PassiveConn) error {
	defer conn.Close()
	return p.Train(ctx, conn)
}

// Train is Run without closing conn: it trains from the current step (0,
// or the step of a restored state) to the end, evaluating as configured,
// and runs the final evaluation unless it has already been done.
func (p *Passive) Train(ctx context.Context, conn transport.PassiveConn) error {
	total := p.TotalSteps()
	step := p.trainStep
	if p.cfg.Staleness > 0 {
		pl, err := transport.AsPipeline(conn, p.cfg.Staleness)
		if err != nil {
			return fmt.Errorf("passive: %w", err)
		}
		step = func(ctx context.Context, _ transport.PassiveConn) error { return p.pipeStep(ctx, pl) }
	}
	for p.step < total {
		if err := step(ctx, conn); err != nil {
			return err
		}
		if p.cfg.EvalEvery > 0 && p.step%int64(p.cfg.EvalEvery) == 0 {
			if err := p.Evaluate(ctx, conn); err != nil {
				return err
			}
			if p.stopAsk || p.cfg.Stop != nil && p.cfg.Stop(p.step) {
				p.stopped = true
				break
			}
		}
		if p.cfg.AfterStep != nil {
			if err := p.cfg.AfterStep(ctx, p.step); err != nil {
				return err
			}
		}
	}
	if p.lastEval != p.step {
		return p.Evaluate(ctx, conn)
	}
	return nil
}

func (p *Passive) trainStep(ctx context.Context, conn transport.PassiveConn) error {
	start := time.Now()
	var waited time.Duration
	defer func() {
		p.timing.Steps++
		p.timing.Exchange += waited
		p.timing.Compute += time.Since(start) - waited
	}()
	epoch, b, rows, err := p.trainBatch()
	if err != nil {
		return err
	}
	// A bottom with a layer that behaves differently in training (a
	// passive-side bottleneck samples) is told so for this step only.
	if m, ok := p.bottom.(interface{ SetTraining(bool) }); ok {
		m.SetTraining(true)
		defer m.SetTraining(false)
	}
	e, send, err := p.embed()
	if err != nil {
		return err
	}
	sent := time.Now()
	bw, err := conn.Exchange(ctx, &transport.Forward{
		Phase: transport.Train, Step: p.step, Epoch: epoch, Batch: b, IDs: p.ids, Embedding: send,
	})
	waited = time.Since(sent)
	if err != nil {
		return fmt.Errorf("passive: step %d: %w", p.step, err)
	}
	grads, err := p.backpropAnswer(e, b, bw)
	if err != nil {
		return err
	}
	if send == e {
		send = nil // the cut output is the embedding sent
	}
	p.ob = Observation{Step: p.step, Epoch: epoch, Batch: b, IDs: p.ids, Rows: rows, Grads: grads}
	return p.finish(&p.ob, send, bw.Grad)
}

// trainBatch gathers this step's batch of the schedule (epoch, batch b,
// its rows) into p.batch and its IDs into p.ids, the features as a
// cheating party changes them.
func (p *Passive) trainBatch() (epoch, b int, rows []int, err error) {
	epoch, b = p.sched.Position(p.step)
	if b == 0 || p.order == nil {
		p.order = p.sched.Order(epoch, p.order)
	}
	rows = p.sched.Rows(p.order, b)
	p.train.X.Gather(rows, &p.batch)
	p.ids = gatherIDs(p.ids, p.train.IDs, rows)
	if p.cfg.Cheat != nil {
		if err := p.cfg.Cheat.Features(p.step, p.ids, &p.batch); err != nil {
			return 0, 0, nil, fmt.Errorf("passive: step %d: changing the features: %w", p.step, err)
		}
	}
	return epoch, b, rows, nil
}

// embed runs the bottom on the batch and returns its cut output e
// (checked finite) and the embedding to send: e rounded to the wire
// encoding, replaced by a test's Send or by a cheating party's.
func (p *Passive) embed() (e, send *tensor.Matrix, err error) {
	if e, err = p.bottom.Forward(&p.batch); err != nil {
		return nil, nil, fmt.Errorf("passive: step %d: %w", p.step, err)
	}
	if err := tensor.CheckFinite(fmt.Sprintf("passive: step %d: cut-layer embedding", p.step), e); err != nil {
		return nil, nil, err
	}
	send = e
	if p.cfg.WireEmbedding != wire.F32 {
		if p.sent == nil {
			p.sent = &tensor.Matrix{}
		}
		p.sent = p.sent.Resize(e.Rows, e.Cols)
		copy(p.sent.Data, e.Data)
		if err := p.cfg.WireEmbedding.Round(p.sent); err != nil {
			return nil, nil, fmt.Errorf("passive: step %d: cut-layer embedding: %w", p.step, err)
		}
		send = p.sent
	}
	if p.cfg.Send != nil {
		if send, err = p.substitute(send, true); err != nil {
			return nil, nil, err
		}
	}
	if p.cfg.Cheat != nil {
		if send, err = p.cheatSend(send); err != nil {
			return nil, nil, err
		}
	}
	return e, send, nil
}

// backpropAnswer checks the active party's answer bw to batch b (of the cut
// output e's shape), lets the hijack check see it and a cheating party
// change it, and backpropagates it through the bottom; it returns the
// gradients at the bottom's layers.
func (p *Passive) backpropAnswer(e *tensor.Matrix, b int, bw *transport.Backward) ([]*tensor.Matrix, error) {
	if err := transport.ValidateBackward(bw, p.step, b, e.Rows, e.Cols); err != nil {
		return nil, fmt.Errorf("passive: refusing the answer: %w", err)
	}
	if p.cfg.Check != nil {
		if err := p.cfg.Check(p.step, bw.Grad); err != nil {
			return nil, err
		}
	}
	grad := bw.Grad
	if p.cfg.Cheat != nil {
		var err error
		if grad, err = p.cfg.Cheat.Gradient(p.step, p.ids, grad); err != nil {
			return nil, fmt.Errorf("passive: step %d: changing the gradient: %w", p.step, err)
		}
		if grad.Rows != e.Rows || grad.Cols != e.Cols {
			return nil, fmt.Errorf("passive: step %d: the changed gradient is %d×%d, want %d×%d", p.step, grad.Rows, grad.Cols, e.Rows, e.Cols)
		}
	}
	grads, err := p.bottom.Backward(grad)
	if err != nil {
		return nil, fmt.Errorf("passive: step %d: %w", p.step, err)
	}
	return grads, nil
}

// Evaluate sends the embeddings of the whole test split, in order, in
// messages of EvalBatch rows; the active party scores them.
func (p *Passive) Evaluate(ctx context.Context, conn transport.PassiveConn) error {
	if p.test.X == nil || p.test.X.Rows == 0 {
		return nil
	}
	n, eb := p.test.X.Rows, p.cfg.EvalBatch
	msgs := (n + eb - 1) / eb
	// Each message's embeddings are computed while the one before is in
	// flight, into the other of two buffers: the bottom's forward then
	// overlaps the active party's scoring (in one process, the two use
	// both cores; over a network, the round trip). Errors come out in the
	// order one message at a time gives: a message's exchange before the
	// next message's forward.
	compute := func(b int) error {
		start, end := b*eb, min((b+1)*eb, n)
		e := &p.evalBuf[b%2]
		if err := p.evalForward(start, end, e); err != nil {
			return fmt.Errorf("passive: evaluation at step %d: %w", p.step, err)
		}
		if err := tensor.CheckFinite(fmt.Sprintf("passive: evaluation at step %d: test embedding", p.step), e); err != nil {
			return err
		}
		if err := p.cfg.WireEmbedding.Round(e); err != nil {
			return fmt.Errorf("passive: evaluation at step %d: test embedding: %w", p.step, err)
		}
		return nil
	}
	if err := compute(0); err != nil {
		return err
	}
	var keep, stop bool
	for b := range msgs {
		start, end := b*eb, min((b+1)*eb, n)
		var next chan error
		if b+1 < msgs {
			next = make(chan error, 1)
			go func() { next <- compute(b + 1) }()
		}
		emb := &p.evalBuf[b%2]
		if p.cfg.Send != nil {
			var err error
			if emb, err = p.substitute(emb, false); err != nil {
				if next != nil {
					<-next
				}
				return err
			}
		}
		bw, err := conn.Exchange(ctx, &transport.Forward{
			Phase: transport.Eval, Step: p.step, Batch: b, Last: end == n,
			IDs: p.test.IDs[start:end], Embedding: emb,
		})
		var nextErr error
		if next != nil {
			nextErr = <-next
		}
		if err != nil {
			return fmt.Errorf("passive: evaluation at step %d: %w", p.step, err)
		}
		if nextErr != nil {
			return nextErr
		}
		if end == n {
			keep, stop = bw.Keep, bw.Stop
		}
	}
	p.lastEval, p.stopAsk = p.step, stop
	if keep && p.cfg.Kept != nil {
		if err := p.cfg.Kept(p.step); err != nil {
			return err
		}
	}
	if p.cfg.EvalObserver != nil {
		return p.cfg.EvalObserver(p.step)
	}
	return nil
}

// evalSlice is the most rows the bottom forwards at once in an
// evaluation: a message of more rows is forwarded in slices of this many,
// whose every layer's activations (2,048 × 128 floats: 1 MiB) stay in a
// core's L2 cache where those of a whole 8,192-row message would not.
// Every row's embedding is the same either way (a row's forward reads
// that row only).
const evalSlice = 2048

// evalForward writes into dst the cut embeddings of the test rows
// [start, end), forwarded in slices of evalSlice rows.
func (p *Passive) evalForward(start, end int, dst *tensor.Matrix) error {
	d := p.bottom.CutDim()
	dst.Resize(end-start, d)
	for s := start; s < end; s += evalSlice {
		e := min(s+evalSlice, end)
		p.evalRows = p.evalRows[:0]
		for r := s; r < e; r++ {
			p.evalRows = append(p.evalRows, r)
		}
		p.test.X.Gather(p.evalRows, &p.batch)
		out, err := p.bottom.Forward(&p.batch)
		if err != nil {
			return err
		}
		if out.Rows != e-s || out.Cols != d {
			return fmt.Errorf("the bottom gave a %d×%d embedding for %d rows of width %d", out.Rows, out.Cols, e-s, d)
		}
		copy(dst.Data[(s-start)*d:(e-start)*d], out.Data[:(e-s)*d])
	}
	return nil
}

// substitute has Config.Send replace e, and checks what it returns.
func (p *Passive) substitute(e *tensor.Matrix, train bool) (*tensor.Matrix, error) {
	out, err := p.cfg.Send.Send(p.step, e, train)
	if err != nil {
		return nil, fmt.Errorf("passive: step %d: replacing the embedding: %w", p.step, err)
	}
	if out.Rows != e.Rows || out.Cols != e.Cols {
		return nil, fmt.Errorf("passive: step %d: the replaced embedding is %d×%d, want %d×%d", p.step, out.Rows, out.Cols, e.Rows, e.Cols)
	}
	return out, nil
}

// cheatSend has Config.Cheat replace a training embedding, and checks
// what it returns.
func (p *Passive) cheatSend(e *tensor.Matrix) (*tensor.Matrix, error) {
	out, err := p.cfg.Cheat.Send(p.step, p.ids, e)
	if err != nil {
		return nil, fmt.Errorf("passive: step %d: changing the embedding: %w", p.step, err)
	}
	if out.Rows != e.Rows || out.Cols != e.Cols {
		return nil, fmt.Errorf("passive: step %d: the changed embedding is %d×%d, want %d×%d", p.step, out.Rows, out.Cols, e.Rows, e.Cols)
	}
	// What is sent is on the wire encoding's grid, in process as over the
	// network (e is then the rounded copy, never the bottom's output).
	if p.cfg.WireEmbedding != wire.F32 {
		if err := p.cfg.WireEmbedding.Round(out); err != nil {
			return nil, fmt.Errorf("passive: step %d: the changed embedding: %w", p.step, err)
		}
	}
	return out, nil
}

func gatherIDs(dst, ids []uint64, rows []int) []uint64 {
	dst = dst[:0]
	for _, r := range rows {
		dst = append(dst, ids[r])
	}
	return dst
}
