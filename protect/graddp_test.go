package protect

import (
	"math"
	"testing"

	"github.com/splitguard/splitguard/tensor"
)

// phi is the standard normal CDF.
func phi(x float64) float64 { return 0.5 * math.Erfc(-x/math.Sqrt2) }

// exactGaussianDelta is the exact privacy profile of the Gaussian
// mechanism whose sensitivity is mu noise standard deviations (Balle and
// Wang 2018, Thm. 8): δ(ε) = Φ(μ/2 − ε/μ) − e^ε·Φ(−μ/2 − ε/μ). k releases
// at Δ/s = r compose to one Gaussian mechanism with μ = r·√k.
func exactGaussianDelta(eps, mu float64) float64 {
	return phi(mu/2-eps/mu) - math.Exp(eps)*phi(-mu/2-eps/mu)
}

// exactGaussianEps inverts exactGaussianDelta by bisection.
func exactGaussianEps(delta, mu float64) float64 {
	lo, hi := 0.0, 1.0
	for exactGaussianDelta(hi, mu) > delta {
		hi *= 2
	}
	for range 200 {
		mid := (lo + hi) / 2
		if exactGaussianDelta(mid, mu) > delta {
			lo = mid
		} else {
			hi = mid
		}
	}
	return hi
}

func gradDPEps(t *testing.T, p Params, releases int64) map[string]float64 {
	t.Helper()
	m, err := Account("grad_dp", p, releases)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestGradDPAccountantConstructedCases(t *testing.T) {
	// Gaussian, per release RDP(α) = α·(2/σ)²/2, so over k releases
	// ρα with ρ = 2k/σ². ε(α) = ρα + L/(α−1), L = log(1/δ), is least at
	// α* = 1 + √(L/ρ), where ε = ρ + 2√(ρL). With L = 9ρ the best order is
	// the integer 4 and ε = 7ρ.
	for _, c := range []struct {
		sigma   float64
		k       int64
		rho     float64 // 2k/σ², by hand
		wantEps float64 // 7ρ
	}{
		{2, 1, 0.5, 3.5},
		{8, 8, 0.25, 1.75},
		{10, 25, 0.5, 3.5},
	} {
		delta := math.Exp(-9 * c.rho)
		m := gradDPEps(t, Params{"grad_dp_sigma": c.sigma, "grad_dp_clip": 3, "grad_dp_delta": delta}, c.k)
		if math.Abs(m["grad_dp_eps"]-c.wantEps) > 1e-12 || m["grad_dp_order"] != 4 || m["grad_dp_delta"] != delta || m["grad_dp_releases"] != float64(c.k) {
			t.Errorf("σ=%v k=%d: got %v, want ε=%v at order 4", c.sigma, c.k, m, c.wantEps)
		}
	}
	// Laplace: ε = k·Δ₁/b = k·2C/(σC) = 2k/σ.
	m := gradDPEps(t, Params{"grad_dp_sigma": 4, "grad_dp_clip": 0.5, "grad_dp_laplace": 1}, 3)
	if m["grad_dp_eps"] != 1.5 || m["grad_dp_delta"] != 0 {
		t.Errorf("Laplace σ=4 k=3: got %v, want ε=1.5, δ=0", m)
	}
	if m := gradDPEps(t, Params{"grad_dp_sigma": 4, "grad_dp_clip": 0.5}, 0); m["grad_dp_eps"] != 0 {
		t.Errorf("no release: ε = %v, want 0", m["grad_dp_eps"])
	}
	if m, err := Account("iso", Params{"iso_t": 1}, 5); m != nil || err != nil {
		t.Errorf("iso has no accountant, got %v, %v", m, err)
	}
}

func TestGradDPAccountantAgainstIndependentBounds(t *testing.T) {
	for _, c := range []struct {
		sigma float64
		k     int64
		delta float64
	}{
		{1, 1, 1e-5}, {2, 10, 1e-5}, {5, 100, 1e-6}, {20, 3, 1e-5}, {0.7, 4, 1e-3},
	} {
		eps := gradDPEps(t, Params{"grad_dp_sigma": c.sigma, "grad_dp_clip": 1, "grad_dp_delta": c.delta}, c.k)["grad_dp_eps"]
		r := 2 / c.sigma // Δ/s
		rho := float64(c.k) * r * r / 2
		L := math.Log(1 / c.delta)
		// Over integer orders 2…64 (a subset of the accountant's grid),
		// computed here on its own: the accountant can only do better.
		intMin := math.Inf(1)
		for a := 2.0; a <= 64; a++ {
			intMin = math.Min(intMin, rho*a+L/(a-1))
		}
		// The best over every real order: no grid does better.
		cont := rho + 2*math.Sqrt(rho*L)
		if eps > intMin+1e-12 || eps < cont-1e-12 {
			t.Errorf("σ=%v k=%d δ=%v: ε=%v outside [%v, %v]", c.sigma, c.k, c.delta, eps, cont, intMin)
		}
		// The RDP bound is an upper bound on the exact ε of the composed
		// Gaussian mechanism (μ = r√k), and not a wildly loose one.
		mu := r * math.Sqrt(float64(c.k))
		exact := exactGaussianEps(c.delta, mu)
		if d := exactGaussianDelta(eps, mu); d > c.delta*(1+1e-9) {
			t.Errorf("σ=%v k=%d: the exact δ at the reported ε=%v is %v > δ=%v", c.sigma, c.k, eps, d, c.delta)
		}
		if eps > 2*exact {
			t.Errorf("σ=%v k=%d: ε=%v more than twice the exact %v", c.sigma, c.k, eps, exact)
		}
	}
}

func TestGradDPClipsAndNoises(t *testing.T) {
	// Nearly no noise: rows above C are scaled to norm C, rows below kept.
	g := tensor.New(3, 2)
	copy(g.Data, []float32{3, 4, 0.3, 0.4, -6, 8})
	for _, c := range []struct {
		laplace float64
		want    []float32
	}{
		{0, []float32{0.6, 0.8, 0.3, 0.4, -0.6, 0.8}},                   // L2 to 1
		{1, []float32{3.0 / 7, 4.0 / 7, 0.3, 0.4, -6.0 / 14, 8.0 / 14}}, // L1 to 1
	} {
		p, err := New("grad_dp", Params{"grad_dp_sigma": 1e-12, "grad_dp_clip": 1, "grad_dp_laplace": c.laplace})
		if err != nil {
			t.Fatal(err)
		}
		out := &tensor.Matrix{}
		st, err := p.Protect(&Batch{Grad: g}, out, newRNG(3))
		if err != nil {
			t.Fatal(err)
		}
		for k, w := range c.want {
			if math.Abs(float64(out.Data[k]-w)) > 1e-6 {
				t.Errorf("laplace=%v: entry %d = %v, want %v", c.laplace, k, out.Data[k], w)
			}
		}
		if math.Abs(st["clipped"]-2.0/3) > 1e-12 {
			t.Errorf("clipped share %v, want 2/3", st["clipped"])
		}
	}
	// The noise has the stated scale: a zero gradient comes back as pure
	// noise with standard deviation σC (Gaussian) or mean |x| = σC
	// (Laplace, whose variance is 2(σC)²).
	zero := tensor.New(2000, 50)
	for _, laplace := range []float64{0, 1} {
		p, _ := New("grad_dp", Params{"grad_dp_sigma": 2, "grad_dp_clip": 0.25, "grad_dp_laplace": laplace})
		out := &tensor.Matrix{}
		if _, err := p.Protect(&Batch{Grad: zero}, out, newRNG(4)); err != nil {
			t.Fatal(err)
		}
		var s2, s1 float64
		for _, v := range out.Data {
			s2 += float64(v) * float64(v)
			s1 += math.Abs(float64(v))
		}
		n := float64(len(out.Data))
		wantVar := 0.25
		if laplace == 1 {
			wantVar = 2 * 0.25
			if math.Abs(s1/n-0.5) > 0.01 {
				t.Errorf("Laplace mean |x| %v, want 0.5", s1/n)
			}
		}
		if math.Abs(s2/n-wantVar)/wantVar > 0.03 {
			t.Errorf("laplace=%v: variance %v, want %v", laplace, s2/n, wantVar)
		}
	}
	for _, p := range []Params{{"grad_dp_sigma": 1}, {"grad_dp_clip": 1}, {"grad_dp_sigma": 1, "grad_dp_clip": 1, "grad_dp_laplace": 1, "grad_dp_delta": 1e-5}, {"grad_dp_sigma": 1, "grad_dp_clip": 1, "grad_dp_delta": 1}} {
		if _, err := New("grad_dp", p); err == nil {
			t.Errorf("New(grad_dp, %v): no error", p)
		}
	}
}
