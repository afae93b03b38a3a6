package protect

import (
	"testing"

	"github.com/splitguard/splitguard/tensor"
)

// benchParams are settings of every gradient protection for
// BenchmarkProtectors (a protection missing here fails the benchmark).
var benchParams = map[string]Params{
	"none": {}, "max_norm": {}, "max_norm_label": {},
	"iso":      {"iso_t": 1},
	"marvell":  {"marvell_s": 1},
	"sparsify": {"sparsify_p": 0.9},
	"grad_dp":  {"grad_dp_sigma": 1, "grad_dp_clip": 1e-3},
	"grad_avg": {},
	"dsgd":     {"dsgd_bins": 8},
}

// BenchmarkProtectors times every registered gradient protection on one
// 1024×128 batch (the Wide&Deep default at batch 1024), the defence's own
// cost per step: compare each with none.
func BenchmarkProtectors(b *testing.B) {
	rng := newRNG(1)
	g := tensor.New(1024, 128)
	labels := make([]float32, 1024)
	probs := make([]float32, 1024)
	for i := range 1024 {
		if rng.Float64() < 0.25 {
			labels[i] = 1
		}
		probs[i] = float32(0.1 + 0.8*rng.Float64())
		scale := float32(probs[i] - labels[i])
		for c := range 128 {
			g.Data[i*128+c] = scale * float32(rng.NormFloat64()) * 1e-3
		}
	}
	for _, name := range Names() {
		p, ok := benchParams[name]
		if !ok {
			b.Fatalf("no benchmark setting for protection %s", name)
		}
		b.Run(name, func(b *testing.B) {
			pr, err := New(name, p)
			if err != nil {
				b.Fatal(err)
			}
			out := &tensor.Matrix{}
			for b.Loop() {
				if _, err := pr.Protect(&Batch{Grad: g, Labels: labels, Probs: probs}, out, rng); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
