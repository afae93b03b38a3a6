package attack

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// plainExPLoit is ExPLoit without the BatchOnly mark, counting its calls:
// the tuned attacker then calls it per fold and for the answer.
type plainExPLoit struct {
	a     *ExPLoit
	calls *int
}

func (p plainExPLoit) Name() string             { return p.a.Name() }
func (p plainExPLoit) Needs() Needs             { return p.a.Needs() }
func (p plainExPLoit) Params() []Param          { return p.a.Params() }
func (p plainExPLoit) SetParams(v Values) error { return p.a.SetParams(v) }
func (p plainExPLoit) Score(obs *Observation, s []float64, f []bool) error {
	*p.calls++
	return p.a.Score(obs, s, f)
}

// markedExPLoit is plainExPLoit with the mark.
type markedExPLoit struct{ plainExPLoit }

func (markedExPLoit) BatchOnly() {}

// TestTunedBatchOnlyScoresOnce: for a BatchOnly attack the tuned attacker
// calls Score once per candidate and batch, and its scores, scored rows
// and choices equal those of the same attack called per fold and for the
// answer (2·budget + 1 calls), bit for bit, over batches at two layers.
func TestTunedBatchOnlyScoresOnce(t *testing.T) {
	const n, d, known, budget, batches = 96, 6, 16, 3, 3
	var plainCalls, markedCalls int
	plain, err := NewTunedFrom("exploit", func() (Attack, error) {
		return plainExPLoit{NewExPLoit(), &plainCalls}, nil
	}, known, budget, 7)
	if err != nil {
		t.Fatal(err)
	}
	marked, err := NewTunedFrom("exploit", func() (Attack, error) {
		return markedExPLoit{plainExPLoit{NewExPLoit(), &markedCalls}}, nil
	}, known, budget, 7)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(3, 8))
	for b := range batches {
		e, g, y := linearTopBatch(r, n, d, 0.35)
		rows := r.Perm(n)[:known]
		labels := make([]uint8, known)
		for k, i := range rows {
			labels[k] = y[i]
		}
		layer := []string{"cut", "2"}[b%2]
		obs := &Observation{Layer: layer, X: g, Output: e, Known: rows, KnownLabels: labels}
		ps, pf := make([]float64, n), make([]bool, n)
		ms, mf := make([]float64, n), make([]bool, n)
		if err := plain.Score(obs, ps, pf); err != nil {
			t.Fatal(err)
		}
		if err := marked.Score(obs, ms, mf); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(ps, ms) || !slices.Equal(pf, mf) {
			t.Fatalf("batch %d: scores differ once the attack is scored once per batch", b)
		}
		pc, _ := plain.Choice(layer)
		mc, _ := marked.Choice(layer)
		if pc.Candidate != mc.Candidate || pc.MeanAUC != mc.MeanAUC || pc.Folds != mc.Folds {
			t.Fatalf("batch %d: choice %+v, per-fold calls choose %+v", b, mc, pc)
		}
	}
	if plainCalls != batches*(2*budget+1) {
		t.Errorf("unmarked attack called %d times, want %d (every batch's folds both hold both classes)", plainCalls, batches*(2*budget+1))
	}
	if markedCalls != batches*budget {
		t.Errorf("BatchOnly attack called %d times, want %d", markedCalls, batches*budget)
	}
}
