package feature

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/splitguard/splitguard/data"
	"github.com/splitguard/splitguard/tensor"
)

// TestInversionOfLinearBottom: the embedding is an injective linear
// function of the features, so a linear surrogate fitted on 300 rows and
// inverted at 100 other rows' embeddings gives back their dense columns
// (R² ≈ 1) and their categorical values; a prior weight that swamps the
// embedding gives back the auxiliary mean (R² ≈ 0) instead.
func TestInversionOfLinearBottom(t *testing.T) {
	const aux, eval, dense, d = 300, 100, 3, 12
	x, e := linearBottom(aux+eval, dense, d, 2)
	in := &Input{AuxEmbed: sliceRows(e, 0, aux), EvalEmbed: sliceRows(e, aux, aux+eval), AuxTruth: rowsOf(x, 0, aux), Seed: 3}
	truth := rowsOf(x, aux, aux+eval)
	for _, c := range []struct {
		name     string
		prior    float64
		min, max float64
	}{{"exact", 1e-4, 0.99, 1}, {"prior only", 1e4, -0.05, 0.05}} {
		att := &Inversion{Hidden: 0, FitSteps: 3000, InvertSteps: 2000, LR: 0.01, InvLR: 0.02, Prior: c.prior}
		res, err := Run(att, in, truth)
		if err != nil {
			t.Fatal(err)
		}
		for _, col := range res.Columns {
			if col.Categorical && c.name == "exact" && col.Score < 0.99 {
				t.Errorf("%s: column %s: accuracy %g, want 1", c.name, col.Name, col.Score)
			}
			if !col.Categorical && (col.Score < c.min || col.Score > c.max) {
				t.Errorf("%s: column %s: R² %g, want in [%g, %g]", c.name, col.Name, col.Score, c.min, c.max)
			}
		}
	}
}

// TestInversionOfANonlinearBottom: e = x³ for x ~ U(0, 1); the surrogate
// learns the cube and its inversion the cube root, where a linear decoder
// stops at R² ≈ 0.84 (TestMLPInvertsANonlinearBottom).
func TestInversionOfANonlinearBottom(t *testing.T) {
	const aux, eval = 1000, 500
	rng := rand.New(rand.NewPCG(5, 5))
	x := &data.Features{Rows: aux + eval, NumDense: 1, DenseNames: []string{"x"}, Dense: make([]float32, aux+eval)}
	e := tensor.New(aux+eval, 1)
	for i := range x.Dense {
		v := rng.Float32()
		x.Dense[i], e.Data[i] = v, v*v*v
	}
	in := &Input{AuxEmbed: sliceRows(e, 0, aux), EvalEmbed: sliceRows(e, aux, aux+eval), AuxTruth: rowsOf(x, 0, aux), Seed: 1}
	// The default prior (0.1) is for tables of many more feature codes
	// than embedding columns; one column fully determined needs a weak one.
	a := &Inversion{Hidden: 64, FitSteps: 400, InvertSteps: 300, LR: 3e-3, InvLR: 0.05, Prior: 0.001}
	res, err := Run(a, in, rowsOf(x, aux, aux+eval))
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Columns[0].Score; got < 0.97 {
		t.Errorf("inversion R² %g, want ≥ 0.97", got)
	}
}

// TestInversionReadsNoOwnColumn: the own-column baseline of an attack that
// reads no own column is the prior: every guess the auxiliary mean.
func TestInversionReadsNoOwnColumn(t *testing.T) {
	const aux, eval, dense, d = 100, 50, 2, 6
	x, e := linearBottom(aux+eval, dense, d, 4)
	auxX := rowsOf(x, 0, aux)
	own := &data.Features{Rows: aux, NumDense: 1, DenseNames: []string{"o"}, Dense: make([]float32, aux)}
	in := &Input{AuxOwn: own, EvalOwn: &data.Features{Rows: eval, NumDense: 1, DenseNames: []string{"o"}, Dense: make([]float32, eval)}, AuxTruth: auxX}
	g, err := (&Inversion{Hidden: 4, FitSteps: 1, InvertSteps: 1, LR: 1, InvLR: 1}).Reconstruct(in)
	if err != nil {
		t.Fatal(err)
	}
	for j := range dense {
		var mean float64
		for r := range aux {
			mean += float64(auxX.Dense[r*dense+j]) / aux
		}
		for r := range eval {
			if math.Abs(float64(g.Dense[r*dense+j])-mean) > 1e-6 {
				t.Fatalf("column %d row %d: %g, want the auxiliary mean %g", j, r, g.Dense[r*dense+j], mean)
			}
		}
	}
	_ = e
	if _, err := (&Inversion{Hidden: -1, FitSteps: 1, InvertSteps: 1, LR: 1, InvLR: 1}).Reconstruct(in); err == nil {
		t.Errorf("a negative hidden width was accepted")
	}
}
