package integrity

import (
	"math"
	"math/rand/v2"

	"github.com/splitguard/splitguard/tensor"
)

// streamNoise is the PCG stream of the noise mode's draws.
const streamNoise = 0xf4ee01

func init() {
	RegisterTamper(TamperSpec{Name: "noise",
		Help: "Gaussian embeddings with the honest embedding's per-column mean and std, estimated on the fly",
		New: func(seed uint64) Tamper {
			return &noise{rng: rand.New(rand.NewPCG(seed, streamNoise))}
		}})
}

// noise sends Gaussian rows whose per-column mean and standard
// deviation are those of every honest embedding it was given (Welford's
// running moments).
type noise struct {
	rng      *rand.Rand
	n        float64
	mean, m2 []float64
	out      *tensor.Matrix
}

func (t *noise) Name() string { return "noise" }

func (t *noise) observe(e *tensor.Matrix, _ bool) {
	if len(t.mean) != e.Cols {
		t.mean, t.m2, t.n = make([]float64, e.Cols), make([]float64, e.Cols), 0
	}
	for r := range e.Rows {
		t.n++
		for c, v := range e.Data[r*e.Cols : (r+1)*e.Cols] {
			d := float64(v) - t.mean[c]
			t.mean[c] += d / t.n
			t.m2[c] += d * (float64(v) - t.mean[c])
		}
	}
}

func (t *noise) Send(_ int64, e *tensor.Matrix, train bool) (*tensor.Matrix, error) {
	t.observe(e, train)
	t.out = t.out.Resize(e.Rows, e.Cols)
	for i := range t.out.Data {
		c := i % e.Cols
		sd := 0.0
		if t.n > 1 {
			sd = math.Sqrt(t.m2[c] / (t.n - 1))
		}
		t.out.Data[i] = float32(t.mean[c] + sd*t.rng.NormFloat64())
	}
	return t.out, nil
}
