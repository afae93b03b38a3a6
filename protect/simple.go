package protect

import (
	"errors"
	"math"
	"math/rand/v2"
	"strconv"

	"github.com/splitguard/splitguard/tensor"
)

func init() {
	Register(Spec{Name: "none", Color: 0x333333, Rank: 1, Reference: true, Help: "no noise: the clean gradient",
		New: func(Params) (Protector, error) { return None{}, nil }})
	Register(Spec{Name: "iso", Color: 0xe69f00, Rank: 2, Help: "isotropic Gaussian noise scaled to the batch's largest gradient",
		Params: []Param{
			{Key: "iso_t", Symbol: "t", Help: "iso: noise ratio t, variance (t/d)·max‖g‖² per coordinate", Min: 0, MinOpen: true, Max: math.Inf(1)},
			{Key: "iso_ratio", Symbol: "r", Help: "iso: noise ratio r, t = r²", Min: 0, MinOpen: true, Max: math.Inf(1)},
		},
		// Legends name t whichever spelling was given, so that every iso
		// run sits on one axis.
		Describe: func(p Params) ([]string, float64) {
			t := p.Get("iso_t")
			if r := p.Get("iso_ratio"); r != 0 {
				t = r * r
			}
			return []string{"t=" + strconv.FormatFloat(t, 'g', 4, 64)}, t
		},
		New: newIso})
	Register(Spec{Name: "max_norm", Color: 0x8844aa, Rank: 3, Help: "noise that lifts every gradient to the batch's largest norm",
		New: func(Params) (Protector, error) { return &MaxNorm{stats: Stats{}}, nil }})
}

// None sends the clean gradient (METHODS §4 "none").
type None struct{}

// Name returns "none".
func (None) Name() string { return "none" }

// Protect copies the clean gradient into out; it returns no stats.
func (None) Protect(b *Batch, out *tensor.Matrix, _ *rand.Rand) (Stats, error) {
	if err := checkBatch("none", b, out, false, false); err != nil {
		return nil, err
	}
	copy(out.Data, b.Grad.Data)
	return nil, nil
}

// Iso adds N(0, (t/d)·max_i‖g_i‖²·I_d) to every row. Stats: noise_var,
// the per-coordinate variance used.
type Iso struct {
	T     float64 // t ≥ 0
	stats Stats
}

func newIso(p Params) (Protector, error) {
	switch {
	case p.Has("iso_t") && p.Has("iso_ratio"):
		return nil, errors.New("both iso t and iso ratio are set; give one (t = ratio²)")
	case !p.Has("iso_t") && !p.Has("iso_ratio"):
		return nil, errors.New("iso needs t (or ratio, t = ratio²) > 0")
	}
	t := p.Get("iso_t")
	if r := p.Get("iso_ratio"); r != 0 {
		t = r * r
	}
	return &Iso{T: t, stats: Stats{}}, nil
}

// Name returns "iso".
func (*Iso) Name() string { return "iso" }

// Protect adds isotropic Gaussian noise scaled to the batch's largest
// gradient norm.
func (p *Iso) Protect(b *Batch, out *tensor.Matrix, rng *rand.Rand) (Stats, error) {
	if err := checkBatch("iso", b, out, false, false); err != nil {
		return nil, err
	}
	g := b.Grad
	var max2 float64
	for i := range g.Rows {
		max2 = math.Max(max2, rowNorm2(g.Row(i)))
	}
	variance := 0.0
	if g.Cols > 0 {
		variance = p.T / float64(g.Cols) * max2
	}
	sd := math.Sqrt(variance)
	for k, v := range g.Data {
		out.Data[k] = float32(float64(v) + sd*rng.NormFloat64())
	}
	p.stats["noise_var"] = variance
	return p.stats, nil
}

// MaxNorm is max_norm (Algorithm 6 of the technical report): each row is
// scaled by 1 + σ_j·ξ_j, ξ_j ~ N(0, 1), with σ_j² = max(‖g_max‖²/‖g_j‖² − 1, 0),
// so every row's expected squared norm is the batch's largest. A zero row
// stays zero. Stats: max_norm, the largest row norm ‖g_max‖.
type MaxNorm struct{ stats Stats }

// Name returns "max_norm".
func (*MaxNorm) Name() string { return "max_norm" }

// Protect applies max_norm.
func (p *MaxNorm) Protect(b *Batch, out *tensor.Matrix, rng *rand.Rand) (Stats, error) {
	if err := checkBatch("max_norm", b, out, false, false); err != nil {
		return nil, err
	}
	g := b.Grad
	var max2 float64
	for i := range g.Rows {
		max2 = math.Max(max2, rowNorm2(g.Row(i)))
	}
	for i := range g.Rows {
		row := g.Row(i)
		n2 := rowNorm2(row)
		sigma := 0.0
		if n2 > 0 {
			sigma = math.Sqrt(math.Max(max2/n2-1, 0))
		}
		scaleRow(out.Row(i), row, 1+sigma*rng.NormFloat64())
	}
	p.stats["max_norm"] = math.Sqrt(max2)
	return p.stats, nil
}

// scaleRow writes dst = c·src.
func scaleRow(dst, src []float32, c float64) {
	for k, v := range src {
		dst[k] = float32(c * float64(v))
	}
}
