package run

import (
	"context"
	"math"
	"slices"
	"sync"
	"testing"

	"github.com/splitguard/splitguard/config"
	"github.com/splitguard/splitguard/data"
	"github.com/splitguard/splitguard/integrity"
	"github.com/splitguard/splitguard/model"
	"github.com/splitguard/splitguard/tensor"
)

// sentLog keeps every training message each passive party sent, by step
// (each party appends to its own list, on its own goroutine).
type sentLog struct {
	mu    sync.Mutex
	steps [][]int64
	msgs  [][]*tensor.Matrix
}

func newSentLog(k int) *sentLog {
	return &sentLog{steps: make([][]int64, k), msgs: make([][]*tensor.Matrix, k)}
}

func (l *sentLog) show(k int, step int64, e *tensor.Matrix, train bool) {
	if !train {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.steps[k] = append(l.steps[k], step)
	l.msgs[k] = append(l.msgs[k], e.Clone())
}

// cheatPartiesConfig is a small run of three passive parties (synthetic
// Criteo split by synth_parties, correlated by synth_shared).
func cheatPartiesConfig(t *testing.T) config.Config {
	cfg := partiesConfig(t)
	cfg.SynthRows, cfg.Epochs, cfg.Attacks, cfg.Contribution = 3000, 1, []string{"norm"}, false
	cfg.Parties, cfg.SynthParties, cfg.SynthShared = nil, 3, 0.5
	return cfg
}

// TestPartiesFreeRiderIsOneParty runs three passive parties honestly and
// with party p2 free-riding from step 4 (noise, constant, replay), and
// checks every training message against the honest run's: before step 4
// every party's is bit-identical; at step 4 the honest parties' still
// are (their bottoms have learned from the same gradients) while p2's is
// its mode's, checked by what the mode means: constant sends one row in
// every row of every message, replay re-sends a message p2 sent before,
// noise none of its honest messages; and every step p2 sends something
// other than its honest embedding of that step.
func TestPartiesFreeRiderIsOneParty(t *testing.T) {
	if testing.Short() {
		t.Skip("trains three passive parties four times")
	}
	const from = 4
	run := func(mode string) *sentLog {
		cfg := cheatPartiesConfig(t)
		if mode != "" {
			cfg.FreeRide, cfg.FreeRideFrom, cfg.Cheater = mode, from, "p2"
		}
		l := newSentLog(3)
		if _, err := Train(context.Background(), cfg, Options{sent: l.show}); err != nil {
			t.Fatal(err)
		}
		return l
	}
	honest := run("")
	if len(honest.msgs[1]) < from+3 {
		t.Fatalf("%d training steps, want at least %d", len(honest.msgs[1]), from+3)
	}
	for _, mode := range []string{"noise", "constant", "replay"} {
		got := run(mode)
		for k := range 3 {
			if !slices.Equal(got.steps[k], honest.steps[k]) {
				t.Fatalf("%s: party %d sent at steps %v, the honest run at %v", mode, k+1, got.steps[k], honest.steps[k])
			}
			for i, step := range got.steps[k] {
				same := slices.Equal(got.msgs[k][i].Data, honest.msgs[k][i].Data)
				switch {
				case step < from && !same:
					t.Errorf("%s: party p%d's message at step %d differs from the honest run's before the free-riding starts", mode, k+1, step)
				case step == from && k != 1 && !same:
					t.Errorf("%s: honest party p%d's message at step %d differs from the honest run's", mode, k+1, step)
				case step >= from && k == 1 && same && !(mode == "replay" && firstOfSize(got.msgs[1][from:i], got.msgs[1][i])):
					t.Errorf("%s: the free-rider's message at step %d is its honest embedding", mode, step)
				}
			}
		}
		p2 := got.msgs[1][from:]
		switch mode {
		case "constant":
			row := p2[0].Data[:p2[0].Cols]
			for i, m := range p2 {
				for r := range m.Rows {
					if !slices.Equal(m.Data[r*m.Cols:(r+1)*m.Cols], row) {
						t.Fatalf("constant: message %d row %d differs from the constant row", from+i, r)
					}
				}
			}
		case "replay":
			// The first message of each size is sent honestly and kept;
			// every later one of that size is that message.
			for i, m := range p2 {
				if firstOfSize(p2[:i], m) {
					continue
				}
				j := slices.IndexFunc(p2, func(o *tensor.Matrix) bool { return o.Rows == m.Rows })
				if !slices.Equal(p2[j].Data, m.Data) {
					t.Errorf("replay: the free-rider's message at step %d is not its message of step %d", from+i, from+j)
				}
			}
		case "noise":
			for i, m := range p2 {
				if slices.ContainsFunc(honest.msgs[1], func(o *tensor.Matrix) bool { return slices.Equal(o.Data, m.Data) }) {
					t.Errorf("noise: the free-rider's message at step %d is one of its honest messages", from+i)
				}
			}
		}
	}
}

// firstOfSize reports whether no message in before has m's row count.
func firstOfSize(before []*tensor.Matrix, m *tensor.Matrix) bool {
	return !slices.ContainsFunc(before, func(o *tensor.Matrix) bool { return o.Rows == m.Rows })
}

// sumTop is a top whose logit is the sum of the row's embedding columns.
type sumTop struct{ identityTop }

func (sumTop) Forward(e *tensor.Matrix, _ *data.Batch) ([]float32, error) {
	out := make([]float32, e.Rows)
	for r := range e.Rows {
		for _, v := range e.Data[r*e.Cols : (r+1)*e.Cols] {
			out[r] += v
		}
	}
	return out, nil
}

// TestPartiesBackdoorOutcomeByHand: two passive parties, each sending its
// one numeric column, a top summing them. Honest party a has x_a = −1, 2,
// −3, 4, the cheater b x_b = 0.5, −4, −3, 0, labels 0, 0, 0, 1, target 1.
// Clean logits −0.5, −2, −6, 4: no row of class 0 called 1 (clean rate
// 0), test AUC 1. The trigger v on b's column alone gives x_a + v:
// v = 2.5 → 1.5, 4.5, −0.5, two of three (on a's column instead it would
// be v + x_b = 3, −1.5, −0.5, one of three); v = −2 → none.
func TestPartiesBackdoorOutcomeByHand(t *testing.T) {
	ids := []uint64{1, 2, 3, 4}
	xa := []float32{-1, 2, -3, 4}
	xb := []float32{0.5, -4, -3, 0}
	fa := &data.Features{Rows: 4, NumDense: 1, Dense: xa}
	fb := &data.Features{Rows: 4, NumDense: 1, Dense: xb}
	pvs := []*view{{test: &data.Dataset{IDs: ids, X: fa}}, {test: &data.Dataset{IDs: ids, X: fb}}}
	av := &view{test: &data.Dataset{IDs: ids, Labels: []uint8{0, 0, 0, 1}}}
	for _, tc := range []struct {
		v, asr float64
	}{{2.5, 2.0 / 3}, {-2, 0}} {
		bd, err := integrity.NewBackdoor("gradient_replacement", integrity.BackdoorConfig{Known: []uint64{4}, TrainIDs: ids, Train: fb, TriggerValue: tc.v})
		if err != nil {
			t.Fatal(err)
		}
		cfg := &config.Config{Backdoor: "gradient_replacement", BackdoorTarget: 1}
		m := &multiRun{runBase: runBase{cfg: cfg}, pvs: pvs, av: av, bottoms: []model.Bottom{firstColumn{}, firstColumn{}}, top: sumTop{},
			cheat: &partyCheat{k: 1, bd: bd, known: []uint64{4}}}
		clean, trig, err := m.backdoorLogits()
		if err != nil {
			t.Fatal(err)
		}
		out, err := backdoorSummary(cfg, bd, []uint64{4}, clean, trig, av)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(out.ASR-tc.asr) > 1e-12 || out.ASRRows != 3 || out.CleanRate != 0 || out.CleanTestAUC != 1 {
			t.Errorf("trigger %g: ASR %g over %d rows, clean rate %g, clean AUC %g; want %g over 3, 0, 1 (logits %v / %v)",
				tc.v, out.ASR, out.ASRRows, out.CleanRate, out.CleanTestAUC, tc.asr, clean, trig)
		}
	}
	if xa[0] != -1 || xb[0] != 0.5 {
		t.Errorf("the test rows' features were changed: %v %v", xa, xb)
	}
}

// TestPartiesBackdoorRun plants each backdoor by party p2 of three, on a
// table whose label every party's columns carry (synth_shared_label 0.8,
// so the model learns in a few hundred steps), and checks the summary's
// outcome against runs computed apart: the honest run learns (test AUC ≥
// 0.85); the dry run's model is the honest run's (the same test AUC to
// every digit); the backdoored run's clean test AUC, computed from every
// party's bottom and the top in one process, equals the run's final test
// AUC, which the active party computed from the parties' evaluation
// messages, and is within 0.03 of the honest run's; gradient replacement
// sends at least half the triggered rows the honest model does not call
// the target to the target (success − clean rate ≥ 0.5); VILLAIN infers at
// least its budget of target rows at precision ≥ 0.95 (its trigger is not
// learnt on this table, integrity.md §10d).
func TestPartiesBackdoorRun(t *testing.T) {
	if testing.Short() {
		t.Skip("trains three passive parties")
	}
	setup := func(attack string, dry bool) config.Config {
		cfg := cheatPartiesConfig(t)
		cfg.SynthRows, cfg.SynthSharedLabel, cfg.Epochs, cfg.LR = 6000, 0.8, 3, 0.01
		if attack != "" {
			cfg.Backdoor, cfg.BackdoorFrom, cfg.Cheater, cfg.BackdoorDryRun = attack, 5, "p2", dry
		}
		return cfg
	}
	honest, err := Train(context.Background(), setup("", false), Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("honest: test AUC %.4f", honest.TestAUCFinal)
	if honest.TestAUCFinal < 0.85 {
		t.Errorf("the honest run's test AUC %.4f: the model did not learn", honest.TestAUCFinal)
	}
	for _, attack := range []string{"gradient_replacement", "villain"} {
		dry, err := Train(context.Background(), setup(attack, true), Options{})
		if err != nil {
			t.Fatal(err)
		}
		if dry.TestAUCFinal != honest.TestAUCFinal {
			t.Errorf("%s dry run: test AUC %.6f, the honest run's %.6f", attack, dry.TestAUCFinal, honest.TestAUCFinal)
		}
		s, err := Train(context.Background(), setup(attack, false), Options{})
		if err != nil {
			t.Fatal(err)
		}
		b := s.Backdoor
		if b == nil {
			t.Fatalf("%s: no backdoor outcome in the summary", attack)
		}
		t.Logf("%s: ASR %.3f over %d rows (clean rate %.3f), clean test AUC %.4f, the run's test AUC %.4f, inferred %d, by confidence %.2f", attack, b.ASR, b.ASRRows, b.CleanRate, b.CleanTestAUC, s.TestAUCFinal, b.Inferred, b.ASRByConfidence)
		// The same model scored twice, in chunks of different sizes
		// (float32 sums in another order): near-tied scores can move the
		// AUC in the sixth digit, a different model moves it far more.
		if math.Abs(b.CleanTestAUC-s.TestAUCFinal) > 1e-4 {
			t.Errorf("%s: clean test AUC %.6f, the run's final test AUC %.6f", attack, b.CleanTestAUC, s.TestAUCFinal)
		}
		if d := b.CleanTestAUC - honest.TestAUCFinal; math.Abs(d) > 0.03 {
			t.Errorf("%s: clean test AUC %.4f, %.4f from the honest run's", attack, b.CleanTestAUC, d)
		}
		if attack == "gradient_replacement" && b.ASR-b.CleanRate < 0.5 {
			t.Errorf("%s: success %.3f against a clean rate of %.3f: the backdoor was not planted", attack, b.ASR, b.CleanRate)
		}
		// VILLAIN's label inference reads p2's gradient beside two other
		// parties' embeddings, where the swapped rows' ∂z/∂e is no longer
		// exactly the source row's: it must still fill the 1% budget (49
		// of the 4,860 training rows) with rows of the target class.
		// (It plants no trigger on this table: integrity.md §10d.)
		if attack == "villain" {
			if b.Inferred < 49 || b.InferredPrecision == nil || *b.InferredPrecision < 0.95 {
				p := math.NaN()
				if b.InferredPrecision != nil {
					p = *b.InferredPrecision
				}
				t.Errorf("%s: %d rows inferred at precision %.3f, want at least 49 at 0.95", attack, b.Inferred, p)
			}
		}
	}
}
