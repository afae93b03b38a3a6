package attack

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/splitguard/splitguard/metrics"
	"github.com/splitguard/splitguard/tensor"
)

// spectralNullQ95 runs the spectral attack (the minority prior orienting
// its sign per batch) on batches of pure Gaussian noise, n rows by d
// columns, whose positives per batch are drawn by pos, and returns the
// nearest-rank 95% quantile of |AUC − ½| over the batches, their mean AUC
// and compositions.
func spectralNullQ95(t *testing.T, batches, n, d int, pos func(*rand.Rand) int) (float64, float64, []metrics.Composition) {
	t.Helper()
	r := rand.New(rand.NewPCG(29, 0x5eed))
	x := tensor.New(n, d)
	labels := make([]uint8, n)
	scores, scored := make([]float64, n), make([]bool, n)
	rows := make([]int, n)
	for i := range rows {
		rows[i] = i
	}
	a := &Spectral{}
	dev := make([]float64, batches)
	comps := make([]metrics.Composition, batches)
	var mean float64
	for b := range batches {
		for i := range x.Data {
			x.Data[i] = float32(r.NormFloat64())
		}
		p := pos(r)
		for i := range labels {
			labels[i] = 0
			if i < p {
				labels[i] = 1
			}
		}
		if err := a.Score(&Observation{Layer: "first", X: x, PositivesMinority: true}, scores, scored); err != nil {
			t.Fatal(err)
		}
		// pairAUC (tune.go) counts every pair: independent of package
		// metrics.
		auc, ok := pairAUC(scores, scored, rows, labels)
		if !ok {
			t.Fatalf("batch %d: no AUC", b)
		}
		dev[b], comps[b] = math.Abs(auc-0.5), metrics.Composition{Pos: p, Neg: n - p}
		mean += auc / float64(batches)
	}
	slices.Sort(dev)
	return dev[int(math.Ceil(0.95*float64(batches)))-1], mean, comps
}

// TestSpectralNullIsTheChanceFloor: on gradients or embeddings that are
// pure noise, independent of the labels, the spectral attack's scores are
// continuous and label-blind (its per-batch choice of sign reads the
// scores only and leaves |AUC − ½| unchanged), so its q95 |AUC − ½| over
// batches must be the chance floor: the closed form 1.959964·√((n+1)/(12·
// n₁·n₀)) for one composition (normal approximation, exact variance), and
// metrics.ChanceQ95Abs for a mixture of small compositions (exact null
// distributions). The tolerance is four standard errors of a q95 from the
// number of batches, √(0.95·0.05/N)/f with f the density of |A − ½| at
// its q95 (2φ(1.96)/sd for a normal A), plus the AUC's grid step.
func TestSpectralNullIsTheChanceFloor(t *testing.T) {
	const z95 = 1.959964 // two-sided 95% normal quantile
	phi := math.Exp(-z95*z95/2) / math.Sqrt(2*math.Pi)
	cases := []struct {
		name       string
		batches, n int
		d          int
		pos        func(*rand.Rand) int
	}{
		// spam's batch: 64 rows, 25 positives; 128 columns (the dual,
		// n < d, power iteration) and 16 (the primal).
		{"64x128, 25 positives", 2000, 64, 128, func(*rand.Rand) int { return 25 }},
		{"64x16, 25 positives", 3000, 64, 16, func(*rand.Rand) int { return 25 }},
		// 10% positives: 1 to ~12 per batch, mostly the exact path.
		{"64x16, binomial 10%", 3000, 64, 16, func(r *rand.Rand) int {
			for {
				k := 0
				for range 64 {
					if r.Float64() < 0.1 {
						k++
					}
				}
				if k > 0 {
					return k
				}
			}
		}},
	}
	for _, c := range cases {
		if testing.Short() && c.d > 16 {
			continue
		}
		got, mean, comps := spectralNullQ95(t, c.batches, c.n, c.d, c.pos)
		floor := metrics.ChanceQ95Abs(comps)
		var sd float64 // the mixture's null standard deviation of A
		for _, k := range comps {
			sd += float64(k.Pos+k.Neg+1) / (12 * float64(k.Pos) * float64(k.Neg)) / float64(len(comps))
		}
		sd = math.Sqrt(sd)
		tol := 4*math.Sqrt(0.95*0.05/float64(c.batches))/(2*phi/sd) + 1/float64(c.n)
		if math.Abs(got-floor) > tol {
			t.Errorf("%s: spectral on noise q95 |AUC − ½| %.4f, chance floor %.4f (tolerance %.4f)", c.name, got, floor, tol)
		}
		if comps[0].Pos == 25 {
			closed := z95 * math.Sqrt(float64(c.n+1)/(12*25*float64(c.n-25)))
			if math.Abs(floor-closed) > 1e-6 {
				t.Errorf("%s: chance floor %.6f, closed form %.6f", c.name, floor, closed)
			}
		}
		if math.Abs(mean-0.5) > 4*sd/math.Sqrt(float64(c.batches)) {
			t.Errorf("%s: mean AUC on noise %.4f, want ½ within %.4f", c.name, mean, 4*sd/math.Sqrt(float64(c.batches)))
		}
		t.Logf("%s: spectral on noise q95 |AUC − ½| %.4f, chance floor %.4f, mean AUC %.4f", c.name, got, floor, mean)
	}
}
