package protect

import (
	"math"
	"testing"

	"github.com/splitguard/splitguard/attack"
	"github.com/splitguard/splitguard/metrics"
	"github.com/splitguard/splitguard/tensor"
)

// TestMarvellCosineLeakClosedForm runs the real Marvell protector and the
// real oracle cosine attack on gradients drawn from Marvell's own model —
// two tight Gaussian classes on either side of the origin along Δ = e₁,
// positives at +¾, negatives at −¼ (they point in opposite directions, as
// real gradients do) — and checks the mean leak AUC against the closed
// form of the direction attacker, Φ(‖Δ‖/√(λ₁⁽⁰⁾ + λ₁⁽¹⁾ + u + v)).
//
// The λ's are derived by hand (u = v ≈ 0, p = ¼, s = 4: the closed form
// r = λ₁⁽⁰⁾/λ₁⁽¹⁾ = √((1+kp)/(1+kq)), k = 1/s, gives λ₁⁽¹⁾ = 4.169 and
// λ₁⁽⁰⁾ = 3.944), so the expected AUC is Φ(1/√8.113) = 0.637, and checked
// against the protector's own statistics on each batch. A wrong noise
// direction, a wrong class assignment of λ₁ or a wrong scale moves the AUC
// far from it: noise along a random direction instead of Δ leaves the
// attack near 1, and noise with λ's swapped or squared shifts it by more
// than the tolerance.
func TestMarvellCosineLeakClosedForm(t *testing.T) {
	const (
		b, d, pos = 1024, 128, 256
		batches   = 60
		sd        = 0.005 // per-coordinate within-class sd: trace spread 0.0032 ≪ ‖Δ‖² = 1
	)
	p, err := New("marvell", Params{"marvell_s": 4})
	if err != nil {
		t.Fatal(err)
	}
	rng := newRNG(11)
	g := tensor.New(b, d)
	y := make([]float32, b)
	labels := make([]uint8, b)
	out := &tensor.Matrix{}
	scores := make([]float64, b)
	scored := make([]bool, b)
	cos, _ := attack.New("cosine")
	var sumAUC, sumModel float64
	for range batches {
		// Exactly pos positives, in random rows.
		perm := rng.Perm(b)
		for i := range b {
			y[i], labels[i] = 0, 0
		}
		for _, i := range perm[:pos] {
			y[i], labels[i] = 1, 1
		}
		for i := range b {
			row := g.Row(i)
			for k := range row {
				row[k] = float32(sd * rng.NormFloat64())
			}
			if y[i] == 1 {
				row[0] += 0.75
			} else {
				row[0] -= 0.25
			}
		}
		st, err := p.Protect(&Batch{Grad: g, Labels: y}, out, rng)
		if err != nil {
			t.Fatal(err)
		}
		if st["lam20"] > 1e-3*st["lam10"] || st["lam21"] > 1e-3*st["lam11"] {
			t.Fatalf("isotropic noise λ₂ = %g, %g on tight classes; want ≈ 0", st["lam20"], st["lam21"])
		}
		oracle := g.Row(perm[0]) // a clean positive
		obs := &attack.Observation{Layer: "cut", X: out, Oracle: oracle}
		if err := cos.Score(obs, scores, scored); err != nil {
			t.Fatal(err)
		}
		auc, ok := metrics.AUC(scores, labels, scored)
		if !ok {
			t.Fatal("AUC undefined on a two-class batch")
		}
		sumAUC += auc
		sigma := math.Sqrt((st["lam10"] + st["lam11"] + st["u"] + st["v"]) / st["delta2"])
		sumModel += 0.5 * math.Erfc(-1/sigma/math.Sqrt2)
	}
	mean, model := sumAUC/batches, sumModel/batches
	const hand = 0.6372 // Φ(1/√8.113), derived in the doc comment
	t.Logf("mean cosine AUC %.4f, closed form %.4f", mean, model)
	if math.Abs(model-hand) > 0.003 {
		t.Errorf("closed form from the protector's λ's = %.4f, want the hand-derived %.4f", model, hand)
	}
	// The per-batch AUC has sd ≈ 0.02 (256 × 768 rows), so the mean of 60
	// has sd ≈ 0.003; the oracle's own offset from Δ adds a little more.
	if math.Abs(mean-hand) > 0.012 {
		t.Errorf("mean cosine leak AUC under Marvell s=4 = %.4f, want %.4f ± 0.012 (closed form)", mean, hand)
	}
}
