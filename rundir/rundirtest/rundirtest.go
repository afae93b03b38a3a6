// Package rundirtest writes small, deterministic run directories for other
// packages' tests (the report's fixtures): a rundir.Recorder records a
// run of synthetic steps, so that the files are exactly what rundir
// writes, never hand-written copies that can drift from it. The steps are
// drawn from a seeded generator without training (no kernel, no clock), so
// the files are the same on every machine. Tests only.
package rundirtest

import (
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/splitguard/splitguard/audit"
	"github.com/splitguard/splitguard/config"
	"github.com/splitguard/splitguard/data"
	"github.com/splitguard/splitguard/party/active"
	"github.com/splitguard/splitguard/protect"
	"github.com/splitguard/splitguard/rundir"
	"github.com/splitguard/splitguard/tensor"
)

// Spec describes a synthetic run.
type Spec struct {
	// Config is config.yaml's text over config.Default() (protect, its
	// parameters, seed, attacks …).
	Config string
	// Steps is the number of training steps (one epoch).
	Steps int
	// Leak sets how far the positives' gradients stand out (0.5: not at
	// all; towards 1: far): the leak AUCs grow with it, most at the cut
	// layer.
	Leak float64
	// AUC is the best test AUC the evaluations approach.
	AUC float64
	// Protection, when set, gives each step's protection statistics
	// (batches.jsonl's "protection") from the step's generator.
	Protection func(r *rand.Rand) protect.Stats
	// Positives, when above 0, is the number of positives in every batch
	// (but the positive-free ones); else each row is positive with
	// probability ¼. One positive per batch leaves a one-hint attack
	// (hint1_inner) undefined at every batch.
	Positives int
	// NoEval leaves eval.jsonl empty; NoSummary leaves summary.json out.
	NoEval, NoSummary bool
	// Features, when set, gives the feature attacks' figures of the
	// evaluation after done steps (eval.jsonl's "features").
	Features func(done int) map[string]float64
	// Parties, when it names two or more passive parties, records a run
	// with several (parties.go): every step is audited once more for each
	// party alone (its own gradients at every layer, leaking less the
	// later the party is named) and for each colluding subset (its
	// members' cut gradients side by side), and every evaluation carries
	// a validation AUC and each party's without it (key contribution).
	Parties []string
	// PartyAttacks, when set, gives the model attacks' figures per party
	// or subset of the evaluation after done steps.
	PartyAttacks func(done int) map[string]map[string]float64
}

// Rows is the batch size of a synthetic run, and EvalEvery its evaluation
// cadence in steps.
const (
	Rows      = 64
	EvalEvery = 10
	width     = 8
)

// Elapsed is the run's recorded wall time, fixed so that its figures
// (examples per second, ms per step) are the same in every test.
const Elapsed = 12500 * time.Millisecond

// Write records the run s describes into dir and returns its summary (nil
// with NoSummary). Every 37th step's batch holds no positive (its leak
// AUCs are null).
func Write(t testing.TB, dir string, s Spec) *rundir.Summary {
	t.Helper()
	cfg := loadConfig(t, dir, s.Config)
	rng := rand.New(rand.NewPCG(cfg.Seed, 7))
	layers := audit.LayerNames(3) // first, 2, cut
	split := labels(rng, s.Steps, s.Positives)
	aud, err := audit.New(config.ExpandAttacks(cfg.Attacks), cfg.PositivesMinority, cfg.Seed)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := rundir.Open(*cfg, false, rundir.Hooks{})
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Close()
	rec.Start(split, aud, int64(s.Steps))
	subsets := partySubsets(t, rec, cfg, s.Parties)
	grads := make([]*tensor.Matrix, len(layers))
	lastEval := s.Steps - s.Steps%EvalEvery
	for step := range s.Steps {
		ys := split.Train.Labels[step*Rows : (step+1)*Rows]
		for l := range grads {
			grads[l] = gradients(rng, ys, shift(s.Leak, l, len(layers)))
		}
		g := slices.Clone(grads)
		ob := &active.Observation{Step: int64(step), Labels: ys,
			Loss: 0.6 - 0.1*float64(step)/float64(s.Steps) + 0.02*rng.NormFloat64(), ProtectTime: 100 * time.Microsecond}
		if s.Protection != nil {
			ob.Stats = s.Protection(rng)
		}
		b := &audit.Batch{Step: int64(step), IDs: split.Train.IDs[step*Rows : (step+1)*Rows], Labels: ys, Layers: layers,
			Grads: g, Clean: func() ([]*tensor.Matrix, error) { return g, nil }}
		parties := partyBatches(rng, b, s.Leak, len(s.Parties), subsets)
		if _, err := rec.Batch(rundir.Observation{Active: ob, Audit: b, Parties: parties}); err != nil {
			t.Fatal(err)
		}
		if done := step + 1; !s.NoEval && done%EvalEvery == 0 {
			// Rising to s.AUC at the last evaluation.
			decay := math.Exp(-float64(done)/40) - math.Exp(-float64(lastEval)/40)
			res := &active.EvalResult{Step: int64(done), AUC: s.AUC - 0.1*decay, Loss: 0.5 + 0.1*decay, ACE: 0.01, Rows: len(split.Test.IDs)}
			var feats map[string]float64
			if s.Features != nil {
				feats = s.Features(done)
			}
			if len(subsets) > 0 {
				partyEval(res, len(s.Parties))
				if s.PartyAttacks != nil {
					rec.SetPartyAttacks(s.PartyAttacks(done))
				}
			}
			if _, err := rec.EvalWithFeatures(res, nil, feats); err != nil {
				t.Fatal(err)
			}
		}
	}
	if s.NoSummary {
		return nil
	}
	if s.NoEval {
		rec.Truncate("the synthetic run has no evaluation")
	}
	sum, err := rec.Finish(int64(s.Steps), Elapsed)
	if err != nil {
		t.Fatal(err)
	}
	return sum
}

// loadConfig reads text over the defaults, as a run does, and writes the
// resolved configuration into dir/config.yaml as the run writes it.
func loadConfig(t testing.TB, dir, text string) *config.Config {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, rundir.ConfigFile)
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.LoadYAML(path, config.Default())
	if err != nil {
		t.Fatal(err)
	}
	cfg.Out, cfg.Batch, cfg.Epochs, cfg.EvalEvery = dir, Rows, 1, EvalEvery
	cfg.Resolve()
	resolved, err := config.Marshal(&cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, resolved, 0o644); err != nil {
		t.Fatal(err)
	}
	return &cfg
}

// labels draws the training split: steps batches of Rows rows, each row
// positive with probability ¼ (or positives rows of each batch), every
// 37th batch without a positive; and a test split of Rows rows.
func labels(rng *rand.Rand, steps, positives int) *data.Split {
	n := steps * Rows
	train := &data.Dataset{IDs: make([]uint64, n), Labels: make([]uint8, n)}
	for i := range n {
		train.IDs[i] = uint64(i)
	}
	for b := range steps {
		if (b+1)%37 == 0 {
			continue
		}
		ys := train.Labels[b*Rows : (b+1)*Rows]
		if positives > 0 {
			for _, i := range rng.Perm(Rows)[:positives] {
				ys[i] = 1
			}
			continue
		}
		for i := range ys {
			if rng.IntN(4) == 0 {
				ys[i] = 1
			}
		}
	}
	test := &data.Dataset{IDs: make([]uint64, Rows), Labels: make([]uint8, Rows)}
	for i := range Rows {
		test.IDs[i] = uint64(n + i)
		test.Labels[i] = uint8(i % 2)
	}
	return &data.Split{Train: train, Test: test}
}

// shift is how far a positive's gradient moves along the first column at
// layer l of L (l = L-1 is the cut).
func shift(leak float64, l, L int) float64 {
	factor := []float64{0.6, 0.8, 1}[min(l+3-L, 2)]
	return 6 * (leak - 0.5) * factor
}

// gradients draws one layer's B×width gradients: standard normal, the
// positives' first column moved by shift.
func gradients(rng *rand.Rand, ys []uint8, shift float64) *tensor.Matrix {
	m := tensor.New(len(ys), width)
	for i, y := range ys {
		for j := range width {
			v := rng.NormFloat64()
			if j == 0 && y == 1 {
				v += shift
			}
			m.Data[i*width+j] = float32(v)
		}
	}
	return m
}
