package protect

import (
	"errors"
	"math"
	"math/rand/v2"

	"github.com/splitguard/splitguard/configkey"
	"github.com/splitguard/splitguard/tensor"
)

func init() {
	Register(Spec{Name: "dsgd", Color: 0xbcbd22, Help: "discrete SGD: every gradient entry rounded at random to one of N levels spanning the batch's mean ± 2 standard deviations (with cae: DCAE)",
		Params: []Param{
			{Key: "dsgd_bins", Symbol: "N", Int: true, Help: "discrete SGD: number N of levels a gradient entry can take", Min: 2, Max: 1 << 20},
		},
		New: func(p Params) (Protector, error) {
			if !p.Has("dsgd_bins") {
				return nil, configkey.Keyed(errors.New("discrete SGD needs its number of levels (key dsgd_bins)"), "dsgd_bins")
			}
			return &DSGD{Bins: int(p.Get("dsgd_bins")), stats: Stats{}}, nil
		}})
}

// DSGD is the gradient discretisation of Zou et al.'s DCAE (after Dryden
// et al.'s quantised communication): with μ and s the mean and standard
// deviation of all the batch's gradient entries, every entry is clipped to
// [μ − 2s, μ + 2s] and rounded to one of the N equally spaced levels
// spanning that range, up or down at random with the probabilities that
// keep the clipped value's expectation (stochastic rounding). The passive
// party receives N distinct values at most. A constant gradient (s = 0)
// is sent as it is. Stats: clipped, the share of entries outside the range.
type DSGD struct {
	Bins  int
	stats Stats
}

// Name returns "dsgd".
func (*DSGD) Name() string { return "dsgd" }

// Protect discretises the gradient.
func (d *DSGD) Protect(b *Batch, out *tensor.Matrix, rng *rand.Rand) (Stats, error) {
	if err := checkBatch("dsgd", b, out, false, false); err != nil {
		return nil, err
	}
	g := b.Grad.Data
	var sum, sum2 float64
	for _, v := range g {
		sum += float64(v)
	}
	n := float64(len(g))
	mean := sum / math.Max(n, 1)
	for _, v := range g {
		dv := float64(v) - mean
		sum2 += dv * dv
	}
	sd := math.Sqrt(sum2 / math.Max(n, 1))
	lo, hi := mean-2*sd, mean+2*sd
	step := (hi - lo) / float64(d.Bins-1)
	clipped := 0
	for k, v := range g {
		if step == 0 {
			out.Data[k] = v
			continue
		}
		x := float64(v)
		if x < lo || x > hi {
			clipped++
			x = math.Min(math.Max(x, lo), hi)
		}
		pos := (x - lo) / step
		i := math.Floor(pos)
		if rng.Float64() < pos-i {
			i++
		}
		i = math.Min(i, float64(d.Bins-1))
		out.Data[k] = float32(lo + i*step)
	}
	d.stats["clipped"] = 0
	if n > 0 {
		d.stats["clipped"] = float64(clipped) / n
	}
	return d.stats, nil
}
