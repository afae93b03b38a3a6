package protect

import (
	"math"
	"math/rand/v2"
	"strconv"

	"github.com/splitguard/splitguard/tensor"
)

func init() {
	Register(Spec{Name: "grad_avg", Color: 0x17becf, Help: "gradient averaging: every row's gradient replaced by the mean of its group (the whole batch by default)",
		Params: []Param{
			{Key: "grad_avg_group", Symbol: "k", Int: true, Help: "gradient averaging: rows averaged together, in consecutive groups of k rows of the shuffled batch (default: the whole batch)", Min: 1, Max: math.Inf(1)},
		},
		Describe: func(p Params) ([]string, float64) {
			if !p.Has("grad_avg_group") {
				return []string{"k=batch"}, math.Inf(1)
			}
			k := p.Get("grad_avg_group")
			return []string{"k=" + strconv.FormatFloat(k, 'g', -1, 64)}, k
		},
		New: func(p Params) (Protector, error) { return &GradAvg{Group: int(p.Get("grad_avg_group"))}, nil }})
}

// GradAvg is gradient averaging (SecretFlow's GradientAverage defence):
// the rows of ∂L/∂e are replaced by their mean, so every example of a
// group receives the same gradient and nothing in it tells the examples
// apart. SecretFlow averages the whole batch; with Group = k > 0 the rows
// are averaged in consecutive groups of k (rows [0, k), [k, 2k), …, the
// last group the remainder), which keeps more per-example signal for
// training. The batch order is the schedule's shuffle, so groups are
// random sets of examples. Means are summed in float64. No stats.
//
// What it assumes: the passive party uses the gradient only for its own
// update, which the batch mean serves (the sum of the rows is unchanged,
// so the bottom model's parameter gradient for a linear first layer is
// that of the batch's mean input); per-example information is lost to it
// too, so utility drops as the groups grow.
type GradAvg struct {
	Group int // rows per group; 0 for the whole batch
	sum   []float64
}

// Name returns "grad_avg".
func (*GradAvg) Name() string { return "grad_avg" }

// Protect writes each group's mean row into every row of the group.
func (a *GradAvg) Protect(b *Batch, out *tensor.Matrix, _ *rand.Rand) (Stats, error) {
	if err := checkBatch("grad_avg", b, out, false, false); err != nil {
		return nil, err
	}
	g := b.Grad
	k := a.Group
	if k <= 0 || k > g.Rows {
		k = g.Rows
	}
	if cap(a.sum) < g.Cols {
		a.sum = make([]float64, g.Cols)
	}
	sum := a.sum[:g.Cols]
	for lo := 0; lo < g.Rows; lo += k {
		hi := min(lo+k, g.Rows)
		clear(sum)
		for i := lo; i < hi; i++ {
			for c, v := range g.Row(i) {
				sum[c] += float64(v)
			}
		}
		n := float64(hi - lo)
		for i := lo; i < hi; i++ {
			row := out.Row(i)
			for c, s := range sum {
				row[c] = float32(s / n)
			}
		}
	}
	return nil, nil
}
