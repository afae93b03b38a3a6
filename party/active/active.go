// Package active is the active (label) party: it holds the labels, the top
// model h and, for Wide&Deep, the wide part's features. For every training
// batch it computes the loss, the gradient g = ∂L/∂e with respect to the
// embedding it received, applies the configured protection and answers
// with g̃. It scores test embeddings and keeps the utility metrics; no
// label, prediction or loss value ever leaves it.
package active

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"time"

	"github.com/splitguard/splitguard/data"
	"github.com/splitguard/splitguard/internal/buf"
	"github.com/splitguard/splitguard/metrics"
	"github.com/splitguard/splitguard/model"
	"github.com/splitguard/splitguard/nn"
	"github.com/splitguard/splitguard/protect"
	"github.com/splitguard/splitguard/schedule"
	"github.com/splitguard/splitguard/tensor"
	"github.com/splitguard/splitguard/transport"
	"github.com/splitguard/splitguard/transport/wire"
)

// PCG streams of the active party's random draws.
const streamProtect = 0xac71e0

// Config is the active party's configuration.
type Config struct {
	// Protector perturbs the gradient before it is sent (required; use
	// protect "none" for no protection).
	Protector protect.Protector
	// Loss are add-on loss terms (e.g. the distance-correlation defence)
	// added to every batch's loss.
	Loss []protect.LossTerm
	// TrainLabels, when set, replace the true training labels in the loss
	// (label DP); metrics always use the true labels.
	TrainLabels []uint8
	// TrainTargets, when set, are the targets of the binary cross-entropy
	// per training row in place of the loss labels (a label codec, CAE);
	// protections and loss terms still see the 0/1 loss labels.
	TrainTargets []float32
	// Wide says whether the top model reads the active party's own
	// features (Wide&Deep); without it the top gets a nil wide batch.
	Wide bool
	// ACEBins is the number of bins of the adaptive calibration error.
	ACEBins int
	Seed    uint64
	// Observer, when set, is called after every training batch.
	Observer func(*Observation) error
	// EvalObserver, when set, is called after every evaluation round.
	EvalObserver func(*EvalResult) error
	// WireGradient is the encoding the gradients are sent in: the
	// protected gradient is rounded to its values (wire.Encoding.Round)
	// before the Observer sees it and it is sent, so that the audit sees
	// what the passive receives (F32, the zero value: as it is).
	WireGradient wire.Encoding
	// WireFeedback turns on error feedback for the gradients' rounding
	// (wire.Feedback): the residual of every training row's last rounding
	// is added to its next gradient before that is rounded. It needs a
	// lossy WireGradient and keeps one float32 per training row and cut
	// column.
	WireFeedback bool
	// ValRows is how many leading rows of the evaluation set are the
	// validation split (the rest are the test split): both are scored in
	// one evaluation round and their metrics kept apart.
	ValRows int
	// Contribution, with a validation split, scores the validation rows
	// a second time at every evaluation with the passive party's
	// embedding replaced by its mean over them (EvalResult.ValAUCWithout):
	// leave-one-party-out, the joint model without what the passive
	// party's rows tell apart.
	Contribution bool
	// LocalSteps Q > 1 takes Q−1 further updates of the top after each
	// training batch, on the embedding received and the batch's labels
	// (FedBCD's local updates; see local.go), before the answer is sent;
	// 0 and 1 take none.
	LocalSteps int
	// LocalCache W > 1 keeps the last W batches' embeddings and draws
	// each local step's batch from them, least used first (CELU-VFL's
	// workset and uniform sampling; see celu.go); 0 and 1 keep the
	// batch just exchanged only (FedBCD).
	LocalCache int
	// LocalWeightThreshold, when set, weights each row of a local step
	// by CELU-VFL's instance weight: the cosine similarity of the fresh
	// and the cached gradient of its embedding, 0 under the threshold.
	LocalWeightThreshold *float64
	// Hijack, when set, makes this a malicious active party (a
	// simulation of the training-hijacking attacks, docs/methods/
	// features.md): the gradient it sends every training batch is
	// Hijack's answer to the embedding, in place of the protected
	// gradient of its loss (the top model still trains on its labels).
	Hijack Hijacker
	// Blocks, with several passive parties, are each party's columns of
	// the concatenated embedding, with its own gradient protection (which
	// then replaces Protector) and, under Contribution, its own
	// leave-one-party-out AUC (parties.go).
	Blocks []Block
}

// Hijacker is a malicious active party's answer to a training batch's
// embedding e: the gradient to send (valid until the next call).
type Hijacker interface {
	Gradient(e *tensor.Matrix) (*tensor.Matrix, error)
}

// Observation is what the active party knows after one training batch.
// Its matrices are reused: copy what must outlive the call.
type Observation struct {
	Step         int64
	Epoch, Batch int
	Rows         []int          // rows of the training split
	Labels       []uint8        // true labels
	LossLabels   []float32      // labels the loss used (noisy under label DP)
	Probs        []float32      // σ(logit)
	Loss         float64        // mean BCE on LossLabels
	LossTerms    float64        // sum of the add-on loss terms (α·log dCor), when any is on
	HasLossTerms bool           // whether any add-on loss term is on
	Embedding    *tensor.Matrix // e, the embedding received
	Clean        *tensor.Matrix // g = ∂L/∂e before protection
	Protected    *tensor.Matrix // g̃, what was sent
	Stats        protect.Stats
	ProtectTime  time.Duration
}

// EvalResult is one evaluation of the test split (and of the validation
// split, when there is one).
type EvalResult struct {
	Step int64
	AUC  float64
	// Loss is the mean BCE of the predictions on the test split, without
	// regularisers.
	Loss float64
	ACE  float64
	Rows int
	// ValRows is the number of validation rows (0: no validation split;
	// then ValAUC and ValLoss are unset). ValAUC is NaN when the
	// validation split has a single class.
	ValRows         int
	ValAUC, ValLoss float64
	// ValAUCWithout is the validation AUC with the passive party's
	// embedding of every row replaced by its mean over the validation
	// rows (Config.Contribution; NaN when off, without a validation
	// split or with a single class).
	ValAUCWithout float64
	// ValAUCWithoutParty, with Config.Blocks and Contribution, is the
	// validation AUC with each passive party's block replaced by its
	// means, in the order of the blocks (NaN for a single class).
	ValAUCWithoutParty []float64
	// TestScores and TestLabels are the test rows' predicted
	// probabilities and labels behind AUC, valid during the EvalObserver
	// call only (a recorder copies what it keeps: the selected
	// evaluation's, for a bootstrap interval).
	TestScores []float64
	TestLabels []uint8
}

// trainingMode is implemented by top models that behave differently in
// training (the MID bottleneck samples its noise); they are in evaluation
// mode outside TrainStep.
type trainingMode interface{ SetTraining(bool) }

// targetMixer is implemented by top models whose input layer mixes the
// rows of a training batch (mixup): it returns the matching targets.
type targetMixer interface{ MixTargets(y []float32) []float32 }

// Active is the active party.
type Active struct {
	top         model.Top
	train, test *data.Dataset
	sched       *schedule.Schedule
	cfg         Config
	pcg         *rand.PCG // rng's source, saved by SaveState
	rng         *rand.Rand
	cutDim      int

	step      int64
	order     []int
	wide      data.Batch
	labels    []uint8
	lossY     []float32
	targetY   []float32
	probs     []float32
	dLogits   []float32
	protected *tensor.Matrix
	clean     *tensor.Matrix // the clean gradient's copy under local steps
	feedback  *wire.Feedback // error feedback of the gradients' rounding, or nil
	wantIDs   []uint64

	evalProbs []float32
	evalRows  []int // the test rows of one evaluation slice
	evalSeen  int
	valEmb    *tensor.Matrix // the validation rows' embeddings (Config.Contribution)

	celu       *celu        // CELU-VFL's workset, or nil (Config.LocalCache, LocalWeightThreshold)
	blocks     []blockState // each passive party's protection scratch (Config.Blocks)
	blockStats protect.Stats
}

// New returns an active party training top on train (whose labels it
// holds) and scoring test, for embeddings of width cutDim. With
// cfg.ValRows > 0 the first ValRows rows of test are the validation split.
func New(top model.Top, train, test *data.Dataset, sched *schedule.Schedule, cutDim int, cfg Config) (*Active, error) {
	if train.Labels == nil || len(train.Labels) != len(train.IDs) {
		return nil, errors.New("active: the training split has no labels")
	}
	if cfg.Protector == nil {
		return nil, errors.New("active: no protection configured (use \"none\" explicitly)")
	}
	if cfg.TrainLabels != nil && len(cfg.TrainLabels) != len(train.Labels) {
		return nil, fmt.Errorf("active: %d loss labels for %d training rows", len(cfg.TrainLabels), len(train.Labels))
	}
	if cfg.TrainTargets != nil && len(cfg.TrainTargets) != len(train.Labels) {
		return nil, fmt.Errorf("active: %d loss targets for %d training rows", len(cfg.TrainTargets), len(train.Labels))
	}
	if cfg.ValRows < 0 || cfg.ValRows >= len(test.IDs) {
		return nil, fmt.Errorf("active: %d validation rows of %d evaluation rows leave no test rows", cfg.ValRows, len(test.IDs))
	}
	if sched.N != len(train.IDs) {
		return nil, fmt.Errorf("active: schedule covers %d examples, training split has %d", sched.N, len(train.IDs))
	}
	if cfg.ACEBins <= 0 {
		cfg.ACEBins = 15
	}
	fb, err := newFeedback(cfg, len(train.IDs), cutDim)
	if err != nil {
		return nil, err
	}
	if len(cfg.Blocks) > 0 {
		if err := checkBlocks(cfg.Blocks, cutDim); err != nil {
			return nil, err
		}
	}
	cl, err := newCELU(cfg)
	if err != nil {
		return nil, err
	}
	pcg := rand.NewPCG(cfg.Seed, streamProtect)
	return &Active{
		top: top, train: train, test: test, sched: sched, cfg: cfg, cutDim: cutDim,
		pcg: pcg, rng: rand.New(pcg),
		protected: &tensor.Matrix{}, feedback: fb, celu: cl,
	}, nil
}

// Step is the number of training steps done.
func (a *Active) Step() int64 { return a.step }

// Handler answers the passive party's messages: an [Active], or a
// deployment's wrapper that delegates to its current Active.
type Handler interface {
	TrainStep(f *transport.Forward) (*transport.Backward, error)
	EvalBatch(f *transport.Forward) (*transport.Backward, error)
}

// Serve answers the passive party's messages until it closes the
// connection. A message that fails validation ends the run with an error
// and is never applied.
func (a *Active) Serve(ctx context.Context, conn transport.ActiveConn) error {
	return Serve(ctx, conn, a)
}

// Serve is the active party's message loop, the same in every
// deployment: it receives each message from conn, has h answer it by its
// phase and replies, until the passive party closes the connection
// (nil) or a message is refused (the handler's error; the message is
// never applied).
func Serve(ctx context.Context, conn transport.ActiveConn, h Handler) error {
	for {
		f, err := conn.Recv(ctx)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		var b *transport.Backward
		switch f.Phase {
		case transport.Train:
			b, err = h.TrainStep(f)
		case transport.Eval:
			b, err = h.EvalBatch(f)
		default:
			err = fmt.Errorf("active: message of unknown phase %v", f.Phase)
		}
		if err != nil {
			return err
		}
		if err := conn.Reply(ctx, b); err != nil {
			return fmt.Errorf("active: step %d: %w", f.Step, err)
		}
	}
}

// TrainStep runs one training step on a validated forward message and
// returns the protected gradient to send back.
func (a *Active) TrainStep(f *transport.Forward) (*transport.Backward, error) {
	epoch, b, rows, err := a.trainRows(f)
	if err != nil {
		return nil, err
	}
	if m, ok := a.top.(trainingMode); ok { // an input-layer defence samples in training only
		m.SetTraining(true)
		defer m.SetTraining(false)
	}
	st, err := a.trainTop(f.Embedding, rows)
	if err != nil {
		return nil, err
	}
	stats, elapsed, err := a.protectGradient(f.Embedding, st.clean, rows)
	if err != nil {
		return nil, err
	}
	if a.cfg.Observer != nil {
		ob := &Observation{Step: a.step, Epoch: epoch, Batch: b, Rows: rows, Labels: a.labels,
			LossLabels: a.lossY, Probs: a.probs, Loss: st.loss, LossTerms: st.extraLoss, HasLossTerms: len(a.cfg.Loss) > 0,
			Embedding: f.Embedding, Clean: st.clean, Protected: a.protected, Stats: stats, ProtectTime: elapsed}
		if err := a.cfg.Observer(ob); err != nil {
			return nil, err
		}
	}
	if err := a.top.Step(); err != nil {
		return nil, fmt.Errorf("active: step %d: %w", a.step, err)
	}
	if err := a.localSteps(f.Embedding, rows, st.raw, st.clean); err != nil {
		return nil, err
	}
	a.step++
	return &transport.Backward{Step: f.Step, Batch: b, Grad: a.protected}, nil
}

// trainRows returns this step's place in the schedule (epoch, batch b)
// and its rows, once f is checked to be that batch's message, and
// gathers the rows' labels (a.labels) and the loss's labels (a.lossY).
func (a *Active) trainRows(f *transport.Forward) (epoch, b int, rows []int, err error) {
	epoch, b = a.sched.Position(a.step)
	if b == 0 || a.order == nil {
		a.order = a.sched.Order(epoch, a.order)
	}
	rows = a.sched.Rows(a.order, b)
	a.wantIDs = a.wantIDs[:0]
	for _, r := range rows {
		a.wantIDs = append(a.wantIDs, a.train.IDs[r])
	}
	if err := transport.ValidateForward(f, transport.Train, a.step, b, a.wantIDs, a.cutDim); err != nil {
		return 0, 0, nil, fmt.Errorf("active: refusing the batch: %w", err)
	}
	n := len(rows)
	a.labels = buf.Grow(a.labels, n)
	a.lossY = buf.Grow(a.lossY, n)
	lossSrc := a.train.Labels
	if a.cfg.TrainLabels != nil {
		lossSrc = a.cfg.TrainLabels
	}
	for i, r := range rows {
		a.labels[i] = a.train.Labels[r]
		a.lossY[i] = float32(lossSrc[r])
	}
	return epoch, b, rows, nil
}

// topStep is what the top's training pass over a batch leaves.
type topStep struct {
	loss, extraLoss float64        // the BCE loss and the loss terms' sum
	raw             []float32      // the batch's targets before mixing, for the local steps
	clean           *tensor.Matrix // the cut-layer gradient before protection
}

// trainTop runs the top's forward and backward pass on the embedding emb
// of rows: the targets (mixed, under mixup), the loss and the
// probabilities (a.probs), the cut-layer gradient with the loss terms'
// added, checked finite.
func (a *Active) trainTop(emb *tensor.Matrix, rows []int) (topStep, error) {
	n := len(rows)
	logits, err := a.top.Forward(emb, a.wideBatch(a.train.X, rows))
	if err != nil {
		return topStep{}, fmt.Errorf("active: step %d: %w", a.step, err)
	}
	a.probs = buf.Grow(a.probs, n)
	a.dLogits = buf.Grow(a.dLogits, n)
	target := a.lossY
	if a.cfg.TrainTargets != nil {
		a.targetY = buf.Grow(a.targetY, n)
		for i, r := range rows {
			a.targetY[i] = a.cfg.TrainTargets[r]
		}
		target = a.targetY
	}
	st := topStep{raw: target}
	if m, ok := a.top.(targetMixer); ok { // mixup mixes the targets with the inputs
		target = m.MixTargets(target)
	}
	if st.loss, err = nn.SigmoidBCE(logits, target, a.dLogits); err != nil {
		return topStep{}, fmt.Errorf("active: step %d: %w", a.step, err)
	}
	nn.Sigmoid(a.probs, logits)
	if st.clean, err = a.top.Backward(a.dLogits); err != nil {
		return topStep{}, fmt.Errorf("active: step %d: %w", a.step, err)
	}
	for _, term := range a.cfg.Loss {
		v, err := term.AddLossGrad(emb, a.lossY, st.clean)
		if err != nil {
			return topStep{}, fmt.Errorf("active: step %d: loss term %s: %w", a.step, term.Name(), err)
		}
		st.extraLoss += v
	}
	if err := tensor.CheckFinite(fmt.Sprintf("active: step %d: cut-layer gradient", a.step), st.clean); err != nil {
		return topStep{}, err
	}
	if a.cfg.LocalSteps > 1 {
		// The local steps reuse the top's gradient buffer: the
		// observation keeps the exchange's own clean gradient.
		a.clean = a.clean.Resize(st.clean.Rows, st.clean.Cols)
		copy(a.clean.Data, st.clean.Data)
		st.clean = a.clean
	}
	return st, nil
}

// protectGradient protects the clean gradient of the batch rows into
// a.protected (each party's block by its own protection, with several
// passive parties), checks it finite, lets a hijacking active replace it
// (from the embedding emb) and rounds it to the wire encoding. It returns
// the protection's statistics and time.
func (a *Active) protectGradient(emb, clean *tensor.Matrix, rows []int) (protect.Stats, time.Duration, error) {
	start := time.Now()
	var stats protect.Stats
	var err error
	if len(a.cfg.Blocks) > 0 {
		stats, err = a.protectBlocks(clean)
	} else {
		stats, err = a.cfg.Protector.Protect(&protect.Batch{Grad: clean, Labels: a.lossY, Probs: a.probs, Step: a.step}, a.protected, a.rng)
	}
	elapsed := time.Since(start)
	if err != nil {
		return nil, 0, fmt.Errorf("active: step %d: protection %s: %w", a.step, a.cfg.Protector.Name(), err)
	}
	if err := tensor.CheckFinite(fmt.Sprintf("active: step %d: protected gradient", a.step), a.protected); err != nil {
		return nil, 0, err
	}
	if a.cfg.Hijack != nil {
		h, err := a.cfg.Hijack.Gradient(emb)
		if err != nil {
			return nil, 0, fmt.Errorf("active: step %d: hijacker: %w", a.step, err)
		}
		if n := len(rows); h.Rows != n || h.Cols != a.cutDim {
			return nil, 0, fmt.Errorf("active: step %d: the hijacker answered a %d×%d embedding with a %d×%d gradient", a.step, n, a.cutDim, h.Rows, h.Cols)
		}
		copy(a.protected.Data, h.Data)
	}
	if err := a.roundGradient(rows); err != nil {
		return nil, 0, fmt.Errorf("active: step %d: protected gradient: %w", a.step, err)
	}
	return stats, elapsed, nil
}

// EvalBatch scores one batch of test embeddings; after the round's last
// batch it computes the test metrics and reports them to the EvalObserver.
func (a *Active) EvalBatch(f *transport.Forward) (*transport.Backward, error) {
	n := len(a.test.IDs)
	if f.Batch == 0 {
		a.evalProbs = buf.Grow(a.evalProbs, n)
		a.evalSeen = 0
	}
	start := a.evalSeen
	end := start + len(f.IDs)
	if end > n {
		return nil, fmt.Errorf("active: evaluation at step %d sends %d rows past the %d test rows", f.Step, end-n, n)
	}
	if f.Step != a.step {
		return nil, fmt.Errorf("active: evaluation for step %d after %d training steps", f.Step, a.step)
	}
	if err := transport.ValidateForward(f, transport.Eval, a.step, f.Batch, a.test.IDs[start:end], a.cutDim); err != nil {
		return nil, fmt.Errorf("active: refusing the evaluation batch: %w", err)
	}
	// The rows go through the top in slices of evalSlice (see there).
	e, d := f.Embedding, f.Embedding.Cols
	if a.cfg.Contribution && start < a.cfg.ValRows {
		if start == 0 {
			a.valEmb = a.valEmb.Resize(a.cfg.ValRows, d)
		}
		t := min(end, a.cfg.ValRows)
		copy(a.valEmb.Data[start*d:t*d], e.Data[:(t-start)*d])
	}
	for s := start; s < end; s += evalSlice {
		t := min(s+evalSlice, end)
		rows := a.evalRows[:0]
		for r := s; r < t; r++ {
			rows = append(rows, r)
		}
		a.evalRows = rows
		slice := &tensor.Matrix{Rows: t - s, Cols: d, Data: e.Data[(s-start)*d : (t-start)*d]}
		logits, err := a.top.Forward(slice, a.wideBatch(a.test.X, rows))
		if err != nil {
			return nil, fmt.Errorf("active: evaluation at step %d: %w", f.Step, err)
		}
		nn.Sigmoid(a.evalProbs[s:t], logits)
	}
	a.evalSeen = end
	if f.Last {
		if end != n {
			return nil, fmt.Errorf("active: evaluation at step %d ended after %d of %d test rows", f.Step, end, n)
		}
		if err := a.finishEval(); err != nil {
			return nil, err
		}
	}
	return &transport.Backward{Step: f.Step, Batch: f.Batch}, nil
}

// evalSlice is the most rows the top forwards at once in an evaluation:
// a message of more rows goes through in slices of this many, whose every
// layer's activations (2,048 × 128 floats: 1 MiB) stay in a core's L2
// cache where those of a whole 8,192-row message would not. Every row's
// logit is the same either way (a row's forward reads that row only).
const evalSlice = 2048

// wideBatch gathers the active party's own features of rows, or returns
// nil for a top without a wide part.
func (a *Active) wideBatch(x *data.Features, rows []int) *data.Batch {
	if !a.cfg.Wide {
		return nil
	}
	x.Gather(rows, &a.wide)
	return &a.wide
}

func (a *Active) finishEval() error {
	all := toFloat64(a.evalProbs)
	v := a.cfg.ValRows
	probs, labels := all[v:], a.test.Labels[v:]
	auc, ok := metrics.AUC(probs, labels, nil)
	if !ok {
		return errors.New("active: the test split has a single class; its AUC is undefined")
	}
	loss, err := metrics.BCE(probs, labels)
	if err != nil {
		return fmt.Errorf("active: test loss: %w", err)
	}
	ace, err := metrics.ACE(probs, labels, a.cfg.ACEBins)
	if err != nil {
		return fmt.Errorf("active: test calibration: %w", err)
	}
	res := &EvalResult{Step: a.step, AUC: auc, Rows: len(labels), Loss: loss, ACE: ace, ValRows: v, TestScores: probs, TestLabels: labels,
		ValAUCWithout: math.NaN()}
	if v > 0 {
		if res.ValAUC, ok = metrics.AUC(all[:v], a.test.Labels[:v], nil); !ok {
			res.ValAUC = math.NaN()
		}
		if res.ValLoss, err = metrics.BCE(all[:v], a.test.Labels[:v]); err != nil {
			return fmt.Errorf("active: validation loss: %w", err)
		}
		if a.cfg.Contribution {
			if res.ValAUCWithout, err = a.aucWithout(); err != nil {
				return err
			}
			if len(a.cfg.Blocks) > 0 {
				if res.ValAUCWithoutParty, err = a.aucWithoutParties(); err != nil {
					return err
				}
			}
		}
	}
	if a.cfg.EvalObserver != nil {
		return a.cfg.EvalObserver(res)
	}
	return nil
}

// aucWithout is the validation AUC with every row's embedding replaced
// by the column means of the validation rows' embeddings (the active
// party's own columns, if any, as they are).
func (a *Active) aucWithout() (float64, error) { return a.aucWithoutCols(0, a.valEmb.Cols) }

func toFloat64(p []float32) []float64 {
	out := make([]float64, len(p))
	for i, v := range p {
		out[i] = float64(v)
	}
	return out
}
