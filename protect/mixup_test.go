package protect

import (
	"bytes"
	"math"
	"slices"
	"testing"

	"github.com/splitguard/splitguard/nn/gradcheck"
)

// TestMixupMixesPairsAndIsItsOwnAdjoint checks the defining equations on
// one batch, computed here from λ and π: ẽ_i = λe_i + (1−λ)e_π(i) and
// ỹ_i = λy_i + (1−λ)y_π(i); and that Backward is the adjoint of Forward,
// ⟨Forward(e), g⟩ = ⟨e, Backward(g)⟩, which is what makes it the gradient.
func TestMixupMixesPairsAndIsItsOwnAdjoint(t *testing.T) {
	l, err := BuildInput(Params{"mixup_alpha": 0.4}, InputOptions{CutDim: 3, LR: 1, Seed: 2})
	if err != nil {
		t.Fatal(err)
	}
	m := l.(*Mixup)
	e := gradcheck.Projection(newRNG(1), 7, 3)
	out, err := m.Forward(e, true)
	if err != nil {
		t.Fatal(err)
	}
	out = out.Clone()
	lam := m.lambda
	if !(lam > 0 && lam < 1) || len(m.perm) != 7 {
		t.Fatalf("λ = %v, π = %v", lam, m.perm)
	}
	sorted := slices.Sorted(slices.Values(m.perm))
	if !slices.Equal(sorted, []int{0, 1, 2, 3, 4, 5, 6}) {
		t.Fatalf("π = %v is not a permutation", m.perm)
	}
	for i := range 7 {
		for c := range 3 {
			want := lam*float64(e.At(i, c)) + (1-lam)*float64(e.At(m.perm[i], c))
			if math.Abs(float64(out.At(i, c))-want) > 1e-6 {
				t.Fatalf("ẽ[%d][%d] = %v, want %v", i, c, out.At(i, c), want)
			}
		}
	}
	y := []float32{1, 0, 0, 1, 0, 0, 0}
	mixed := slices.Clone(m.MixTargets(y))
	for i := range y {
		if want := lam*float64(y[i]) + (1-lam)*float64(y[m.perm[i]]); math.Abs(float64(mixed[i])-want) > 1e-6 {
			t.Errorf("ỹ[%d] = %v, want %v", i, mixed[i], want)
		}
	}
	g := gradcheck.Projection(newRNG(2), 7, 3)
	de, err := m.Backward(g)
	if err != nil {
		t.Fatal(err)
	}
	if lhs, rhs := gradcheck.Project(g, out), gradcheck.Project(e, de); math.Abs(lhs-rhs) > 1e-5 {
		t.Errorf("⟨F(e), g⟩ = %v, ⟨e, Fᵀ(g)⟩ = %v", lhs, rhs)
	}
	// Evaluation leaves the embedding alone and the targets too.
	if ev, _ := m.Forward(e, false); ev != e {
		t.Error("evaluation changed the embedding")
	}
	if got := m.MixTargets(y); !slices.Equal(got, y) {
		t.Error("evaluation mixed the targets")
	}
}

func TestMixupBetaAndState(t *testing.T) {
	// Beta(α, α) has mean ½ and variance 1/(4(2α + 1)).
	for _, a := range []float64{0.2, 1, 3} {
		rng := newRNG(uint64(a * 10))
		const n = 200000
		var s, s2 float64
		for range n {
			x := betaSym(rng, a)
			s += x
			s2 += x * x
		}
		mean, v := s/n, s2/n-(s/n)*(s/n)
		if want := 1 / (4 * (2*a + 1)); math.Abs(mean-0.5) > 0.005 || math.Abs(v-want) > 0.02*want {
			t.Errorf("α=%v: mean %v, variance %v, want ½ and %v", a, mean, v, want)
		}
	}
	m, _ := NewMixup(1, 3)
	e := gradcheck.Projection(newRNG(1), 5, 2)
	m.Forward(e, true)
	var buf bytes.Buffer
	if err := m.Save(&buf); err != nil {
		t.Fatal(err)
	}
	m.Forward(e, true)
	want := m.lambda
	fresh, _ := NewMixup(1, 99)
	if err := fresh.Load(&buf); err != nil {
		t.Fatal(err)
	}
	fresh.Forward(e, true)
	if fresh.lambda != want {
		t.Errorf("after Load λ = %v, want %v", fresh.lambda, want)
	}
	if _, err := NewMixup(0, 1); err == nil {
		t.Error("α = 0 accepted")
	}
	if err := Check("none", Params{"mixup_alpha": 1, "mid_lambda": 0.1}); err == nil {
		t.Error("mixup and MID together passed the check")
	}
}
