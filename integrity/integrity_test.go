package integrity

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/splitguard/splitguard/tensor"
)

// randBatch is a rows×cols matrix of standard normal draws.
func randBatch(rng *rand.Rand, rows, cols int) *tensor.Matrix {
	m := tensor.New(rows, cols)
	for i := range m.Data {
		m.Data[i] = float32(rng.NormFloat64())
	}
	return m
}

// TestBatchHashIsPermutationInvariant checks that a batch and any
// permutation of its rows hash alike, and that a change of one value
// by one unit in the last place, or a row swapped for a copy of another,
// changes the hash.
func TestBatchHashIsPermutationInvariant(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	e := randBatch(rng, 16, 4)
	h := BatchHash(e, nil)
	for range 5 {
		p := rng.Perm(e.Rows)
		q := tensor.New(e.Rows, e.Cols)
		for i, r := range p {
			copy(q.Data[i*4:(i+1)*4], e.Data[r*4:(r+1)*4])
		}
		if BatchHash(q, nil) != h {
			t.Fatalf("permutation %v changes the hash", p)
		}
	}
	for _, tc := range []struct {
		name   string
		change func(m *tensor.Matrix)
	}{
		{"one ulp", func(m *tensor.Matrix) { m.Data[7] = math.Nextafter32(m.Data[7], 10) }},
		{"a duplicated row", func(m *tensor.Matrix) { copy(m.Data[0:4], m.Data[4:8]) }},
		{"a transposed shape", func(m *tensor.Matrix) { m.Rows, m.Cols = m.Cols, m.Rows }},
	} {
		m := clone(nil, e)
		tc.change(m)
		if BatchHash(m, nil) == h {
			t.Errorf("%s: same hash", tc.name)
		}
	}
}

// firstRepeat is the first step after from whose batch size equals that
// of a batch sent at or after from, before it: where the replay mode first
// re-sends (it stores the first batch of each size from step from on).
func firstRepeat(sizes []int, from int) int {
	for t := from + 1; t < len(sizes); t++ {
		if slices.Contains(sizes[from:t], sizes[t]) {
			return t
		}
	}
	return -1
}

// TestReplayDetectorFiresAtTheFirstReplayedBatch feeds honest random
// batches (sizes as a schedule with a short last batch gives them)
// through the replay mode and the replay detector, for several seeds and
// starting steps: the detector first fires exactly at the first replayed
// batch (firstRepeat), fires at every replayed batch after, and never
// fires on the honest stream.
func TestReplayDetectorFiresAtTheFirstReplayedBatch(t *testing.T) {
	var sizes []int
	for range 3 { // three epochs of 5 batches of 8 rows and one of 3
		sizes = append(sizes, 8, 8, 8, 8, 8, 3)
	}
	for seed := uint64(1); seed <= 5; seed++ {
		for _, from := range []int{0, 3, 5} {
			rng := rand.New(rand.NewPCG(seed, 7))
			tamper, err := NewTamper("replay", int64(from), seed)
			if err != nil {
				t.Fatal(err)
			}
			onTamper, onHonest := mustDetector(t, "replay"), mustDetector(t, "replay")
			first, want := -1, firstRepeat(sizes, from)
			for s, n := range sizes {
				e := randBatch(rng, n, 4)
				if got := onHonest.Observe(int64(s), e); got != 0 {
					t.Fatalf("seed %d: the detector fired at honest step %d", seed, s)
				}
				sent, err := tamper.Send(int64(s), e, true)
				if err != nil {
					t.Fatal(err)
				}
				replayed := s >= from && slices.Contains(sizes[from:s], n)
				score := onTamper.Observe(int64(s), sent)
				if (score == 1) != replayed {
					t.Fatalf("seed %d from %d: step %d (replayed %t) scored %v", seed, from, s, replayed, score)
				}
				if score == 1 && first < 0 {
					first = s
				}
			}
			if first != want {
				t.Errorf("seed %d from %d: first alarm at step %d, the first replayed batch is step %d", seed, from, first, want)
			}
		}
	}
}

func mustDetector(t *testing.T, name string) Detector {
	t.Helper()
	d, err := NewDetector(name)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestNoiseAndConstantCarryNoInformation checks the noise mode's rows
// against the honest embeddings' column means and standard deviations
// (computed here in two passes) and their correlation with the honest
// rows (≈ 0); and that the constant mode sends the first batch's column
// means in every row.
func TestNoiseAndConstantCarryNoInformation(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	mu, sd := []float64{-1, 0, 2}, []float64{0.5, 1, 3}
	batch := func() *tensor.Matrix {
		m := tensor.New(400, 3)
		for i := range m.Data {
			c := i % 3
			m.Data[i] = float32(mu[c] + sd[c]*rng.NormFloat64())
		}
		return m
	}
	noise, _ := NewTamper("noise", 0, 9)
	var honest, sent []float64
	for s := range 10 {
		e := batch()
		out, err := noise.Send(int64(s), e, true)
		if err != nil {
			t.Fatal(err)
		}
		if s < 2 { // let the running moments settle
			continue
		}
		for i := range e.Data {
			if i%3 == 2 {
				honest, sent = append(honest, float64(e.Data[i])), append(sent, float64(out.Data[i]))
			}
		}
	}
	m, v := moments(sent)
	if math.Abs(m-mu[2]) > 0.15 || math.Abs(math.Sqrt(v)-sd[2]) > 0.15 {
		t.Errorf("noise column: mean %.3f sd %.3f, want %v and %v", m, math.Sqrt(v), mu[2], sd[2])
	}
	if r := corr(honest, sent); math.Abs(r) > 0.05 {
		t.Errorf("noise correlates %.3f with the honest embedding", r)
	}

	constant, _ := NewTamper("constant", 0, 1)
	first := batch()
	want := make([]float32, 3)
	for c := range 3 {
		col := make([]float64, 0, first.Rows)
		for r := range first.Rows {
			col = append(col, float64(first.Data[r*3+c]))
		}
		mm, _ := moments(col)
		want[c] = float32(mm)
	}
	for s, e := range []*tensor.Matrix{first, batch(), batch()} {
		out, _ := constant.Send(int64(s), e, s > 0)
		for r := range out.Rows {
			for c := range 3 {
				if d := math.Abs(float64(out.Data[r*3+c] - want[c])); d > 1e-5 {
					t.Fatalf("constant: step %d row %d column %d is %v, want %v", s, r, c, out.Data[r*3+c], want[c])
				}
			}
		}
	}
}

func moments(x []float64) (mean, variance float64) {
	for _, v := range x {
		mean += v
	}
	mean /= float64(len(x))
	for _, v := range x {
		variance += (v - mean) * (v - mean)
	}
	return mean, variance / float64(len(x)-1)
}

func corr(x, y []float64) float64 {
	mx, vx := moments(x)
	my, vy := moments(y)
	c := 0.0
	for i := range x {
		c += (x[i] - mx) * (y[i] - my)
	}
	return c / float64(len(x)-1) / math.Sqrt(vx*vy)
}

// TestCollapseScoresAgainstHistory checks the collapse detector against
// the variances computed here: the first ten batches score 0 and are left
// out of the history (a tenth of the spread among them scores 0, and
// later batches are not compared with their larger spread), a batch like
// the earlier ones scores near 0, a constant batch 1, one of half the
// spread 1 − 1/4.
func TestCollapseScoresAgainstHistory(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	d := mustDetector(t, "collapse")
	for s := range 10 {
		b := randBatch(rng, 2000, 4)
		for i := range b.Data {
			b.Data[i] *= 10
			if s == 9 {
				b.Data[i] /= 100 // a tenth of the spread of the ten batches
			}
		}
		if got := d.Observe(int64(s), b); got != 0 {
			t.Fatalf("warm-up batch %d scored %v, want 0", s, got)
		}
	}
	for s := 10; s < 30; s++ {
		if got := d.Observe(int64(s), randBatch(rng, 2000, 4)); got > 0.15 {
			t.Fatalf("step %d: honest batch scored %v", s, got)
		}
	}
	half := randBatch(rng, 2000, 4)
	for i := range half.Data {
		half.Data[i] /= 2
	}
	if got := d.Observe(30, half); math.Abs(got-0.75) > 0.05 {
		t.Errorf("half the spread scored %v, want ≈ 0.75", got)
	}
	flat := tensor.New(100, 4)
	for i := range flat.Data {
		flat.Data[i] = 0.3
	}
	if got := d.Observe(31, flat); got != 1 {
		t.Errorf("constant batch scored %v, want 1", got)
	}
}

// TestUnknownNames checks the registries' refusals.
func TestUnknownNames(t *testing.T) {
	if _, err := NewTamper("nope", 0, 1); err == nil {
		t.Error("unknown tamper accepted")
	}
	if _, err := NewTamper("noise", -1, 1); err == nil {
		t.Error("negative start accepted")
	}
	if _, err := NewDetector("nope"); err == nil {
		t.Error("unknown detector accepted")
	}
}
