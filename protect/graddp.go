package protect

import (
	"errors"
	"math"
	"math/rand/v2"
	"strconv"

	"github.com/splitguard/splitguard/configkey"
	"github.com/splitguard/splitguard/tensor"
)

// gradDPDelta is the δ at which the Gaussian mechanism's ε is reported
// when key grad_dp_delta is not set.
const gradDPDelta = 1e-5

func init() {
	Register(Spec{Name: "grad_dp", Color: 0xd62728, Help: "gradient DP: each example's gradient clipped to norm C, plus Gaussian or Laplace noise of scale σ·C; ε reported in summary.json",
		Params: []Param{
			{Key: "grad_dp_sigma", Symbol: "σ", Help: "gradient DP: noise multiplier σ, the noise's standard deviation (Gaussian) or scale (Laplace) per coordinate in units of C", Min: 0, MinOpen: true, Max: math.Inf(1)},
			{Key: "grad_dp_clip", Symbol: "C", Help: "gradient DP: clipping norm C of each example's gradient row (L2 for Gaussian noise, L1 for Laplace)", Min: 0, MinOpen: true, Max: math.Inf(1)},
			{Key: "grad_dp_laplace", Symbol: "laplace", Int: true, Help: "gradient DP: 1 for Laplace noise and L1 clipping (pure ε), 0 (default) for Gaussian noise and L2 clipping", Min: 0, Max: 1},
			{Key: "grad_dp_delta", Symbol: "δ", Help: "gradient DP: δ at which the accountant reports the Gaussian mechanism's ε (default 1e-5)", Min: 0, MinOpen: true, Max: 1, MaxOpen: true},
		},
		Describe: func(p Params) ([]string, float64) {
			f := func(v float64) string { return strconv.FormatFloat(v, 'g', 4, 64) }
			parts := []string{"σ=" + f(p.Get("grad_dp_sigma")), "C=" + f(p.Get("grad_dp_clip"))}
			if p.Get("grad_dp_laplace") == 1 {
				parts = append(parts, "laplace")
			}
			return parts, p.Get("grad_dp_sigma")
		},
		New: func(p Params) (Protector, error) {
			g, err := gradDPFrom(p)
			if err != nil {
				return nil, err
			}
			return g, nil
		},
		Account: func(p Params, releases int64) (map[string]float64, error) {
			g, err := gradDPFrom(p)
			if err != nil {
				return nil, err
			}
			return g.Account(releases)
		},
		Bench: Params{"grad_dp_sigma": 1, "grad_dp_clip": 1e-3}})
}

// GradDP is gradient perturbation with differential privacy for the label
// (Yang et al.'s GradPerturb, arXiv 2203.02073; VFLAIR's Gaussian and
// Laplace DP defences), one gradient row per example:
//
//	g̃_i = g_i·min(1, C/‖g_i‖) + σ·C·ξ_i,
//
// with ξ_i a vector of independent standard Gaussian draws and ‖·‖ the L2
// norm (Gaussian), or standard Laplace draws and the L1 norm (Laplace).
//
// # What is protected, and the accountant
//
// The neighbouring relation is one example's label changed. Row i of ∂L/∂e
// is the only row of the step's gradient that depends on example i's label
// directly, and after clipping it moves by at most 2C (any two vectors in
// the ball of radius C): the sensitivity is Δ = 2C, in L2 (Gaussian) or L1
// (Laplace). One release of row i is therefore
//
//   - Gaussian: (α, α·Δ²/(2σ²C²)) = (α, 2α/σ²)-Rényi DP at every order
//     α > 1 (Mironov 2017, Prop. 7);
//   - Laplace: (Δ/(σC), 0) = (2/σ, 0)-DP.
//
// Batches are a shuffled partition of the training split in every epoch
// (package schedule), so an example's row is released once per epoch it
// takes part in and there is no amplification by subsampling: a run in
// which every example was released at most k times has composed k
// mechanisms (adaptive composition), giving RDP 2kα/σ², converted to
// (ε, δ) by ε = min_α 2kα/σ² + log(1/δ)/(α − 1) (Mironov 2017, Prop. 3)
// over the orders [dpOrders]; and pure ε = 2k/σ for Laplace.
//
// The guarantee treats the active party's top model as fixed between
// releases, as the GradPerturb analysis does: the top model is trained on
// the clean labels, and rows of other examples released later depend on
// example i's label through it. That path is not accounted for, so ε
// bounds what each example's own gradient rows say about its label, not
// everything the passive party sees.
//
// Stats: clipped (share of the batch's rows that were clipped) and
// noise_scale (σ·C).
type GradDP struct {
	Sigma, Clip float64
	Laplace     bool
	Delta       float64
	stats       Stats
}

func gradDPFrom(p Params) (*GradDP, error) {
	if !p.Has("grad_dp_sigma") || !p.Has("grad_dp_clip") {
		return nil, configkey.Keyed(errors.New("gradient DP needs its noise multiplier (key grad_dp_sigma) and clipping norm (key grad_dp_clip)"), "grad_dp_sigma", "grad_dp_clip")
	}
	laplace := p.Get("grad_dp_laplace") == 1
	if laplace && p.Has("grad_dp_delta") {
		return nil, configkey.Keyed(errors.New("key grad_dp_delta applies to Gaussian noise only; Laplace noise (key grad_dp_laplace = 1) gives pure ε"), "grad_dp_delta", "grad_dp_laplace")
	}
	delta := gradDPDelta
	if p.Has("grad_dp_delta") {
		delta = p.Get("grad_dp_delta")
	}
	return &GradDP{Sigma: p.Get("grad_dp_sigma"), Clip: p.Get("grad_dp_clip"), Laplace: laplace, Delta: delta, stats: Stats{}}, nil
}

// Name returns "grad_dp".
func (*GradDP) Name() string { return "grad_dp" }

// Protect clips every row to norm C and adds the noise.
func (d *GradDP) Protect(b *Batch, out *tensor.Matrix, rng *rand.Rand) (Stats, error) {
	if err := checkBatch("grad_dp", b, out, false, false); err != nil {
		return nil, err
	}
	g := b.Grad
	scale := d.Sigma * d.Clip
	clipped := 0
	for i := range g.Rows {
		row, dst := g.Row(i), out.Row(i)
		var norm float64
		if d.Laplace {
			for _, v := range row {
				norm += math.Abs(float64(v))
			}
		} else {
			norm = math.Sqrt(rowNorm2(row))
		}
		c := 1.0
		if norm > d.Clip {
			c = d.Clip / norm
			clipped++
		}
		for k, v := range row {
			var noise float64
			if d.Laplace {
				noise = rng.ExpFloat64()
				if rng.Uint64()&1 == 1 {
					noise = -noise
				}
			} else {
				noise = rng.NormFloat64()
			}
			dst[k] = float32(c*float64(v) + scale*noise)
		}
	}
	d.stats["clipped"] = 0
	if g.Rows > 0 {
		d.stats["clipped"] = float64(clipped) / float64(g.Rows)
	}
	d.stats["noise_scale"] = scale
	return d.stats, nil
}

// Account returns the privacy spent once every example's row has been
// released at most releases times: eps, delta, releases and, for the
// Gaussian, the Rényi order that gave eps.
func (d *GradDP) Account(releases int64) (map[string]float64, error) {
	if releases < 0 {
		return nil, errors.New("negative number of releases")
	}
	if releases == 0 || !d.Laplace {
		// Per release, RDP(α) = α·Δ²/(2s²) with Δ/s = 2C/(σC) = 2/σ.
		return gaussianReleases(d.Sigma, d.Delta, releases)
	}
	k := float64(releases)
	return map[string]float64{"eps": k * 2 / d.Sigma, "delta": 0, "releases": k}, nil
}
