package attack

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/splitguard/splitguard/tensor"
)

// BenchmarkAllAttacks1024x128 runs every registered gradient attack once
// per iteration on one 1024×128 batch (hints picked once per batch).
func BenchmarkAllAttacks1024x128(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	g, labels := gradientBatch(r, 1024, 128, 0.25, 0.1)
	var attacks []Attack
	for _, n := range Names() {
		if a, err := New(n); err == nil && a.Needs().Input == Gradient {
			attacks = append(attacks, a)
		}
	}
	s := make([]float64, g.Rows)
	f := make([]bool, g.Rows)
	hints := make([]int, 0, 5)
	known, knownLabels, out := peerInputs(r, labels, 128)
	b.ReportAllocs()
	for b.Loop() {
		hints = PickHints(labels, 5, r, hints)
		obs := Observation{Layer: "cut", X: g, Oracle: g.Row(hints[0]), Hints: hints,
			Known: known, KnownLabels: knownLabels, Output: out}
		for _, a := range attacks {
			if err := a.Score(&obs, s, f); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkAttack times each attack alone on 1024×128 and the spectral
// attack also at B = 8192.
func BenchmarkAttack(b *testing.B) {
	r := rand.New(rand.NewPCG(3, 4))
	g, labels := gradientBatch(r, 8192, 128, 0.25, 0.1)
	hints := PickHints(labels[:1024], 5, r, nil)
	small := *g
	small.Rows, small.Data = 1024, g.Data[:1024*128]
	for _, n := range append(Names(), "spectral8192") {
		x := &small
		if n == "spectral8192" {
			n, x = "spectral", g
		}
		a, err := New(n)
		if err != nil {
			continue // an epoch or model attack
		}
		b.Run(n+"/"+itoa(x.Rows), func(b *testing.B) {
			s := make([]float64, x.Rows)
			f := make([]bool, x.Rows)
			known, knownLabels, out := peerInputs(rand.New(rand.NewPCG(5, 6)), labels[:x.Rows], 128)
			obs := &Observation{X: x, Oracle: g.Row(hints[0]), Hints: hints, PositivesMinority: true,
				Known: known, KnownLabels: knownLabels, Output: out}
			b.ReportAllocs()
			for b.Loop() {
				if err := a.Score(obs, s, f); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func itoa(n int) string {
	if n == 8192 {
		return "8192x128"
	}
	return "1024x128"
}

// BenchmarkSpectralShapes times the spectral attack on isotropic Gaussian
// batches, whose flat spectrum makes the power iteration run to its cap:
// the authors' cut (B = 8192, d = 128) and an image cut embedding
// (B = 128, d = 1600, where the iteration runs on the 128×128 EEᵀ).
func BenchmarkSpectralShapes(b *testing.B) {
	for _, sz := range [][2]int{{8192, 128}, {128, 1600}} {
		b.Run(fmt.Sprintf("%dx%d", sz[0], sz[1]), func(b *testing.B) {
			r := rand.New(rand.NewPCG(5, 6))
			x := tensor.New(sz[0], sz[1])
			for k := range x.Data {
				x.Data[k] = float32(r.NormFloat64())
			}
			a := &Spectral{}
			s := make([]float64, sz[0])
			f := make([]bool, sz[0])
			obs := &Observation{X: x, PositivesMinority: true}
			b.ReportAllocs()
			for b.Loop() {
				if err := a.Score(obs, s, f); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(a.Iterations), "iterations")
		})
	}
}

// BenchmarkMemory times the epoch-memory attacks (memory_norm,
// memory_cosine), which are not in BenchmarkAttack: Observe is their cost
// per 1024×128 batch (an epoch of 64 batches of new IDs, then the same IDs
// again), Scores their cost per epoch over the 65536 IDs remembered.
func BenchmarkMemory(b *testing.B) {
	const batches, rows, d = 64, 1024, 128
	r := rand.New(rand.NewPCG(7, 8))
	g, _ := gradientBatch(r, rows, d, 0.25, 0.1)
	oracle := g.Row(0)
	ids := make([][]uint64, batches)
	for k := range ids {
		ids[k] = make([]uint64, rows)
		for i := range ids[k] {
			ids[k][i] = uint64(k*rows + i)
		}
	}
	b.Run("observe/1024x128", func(b *testing.B) {
		m := NewMemory()
		k := 0
		b.ReportAllocs()
		for b.Loop() {
			if err := m.Observe("cut", ids[k%batches], g, oracle); err != nil {
				b.Fatal(err)
			}
			k++
		}
	})
	b.Run("scores/65536x128", func(b *testing.B) {
		m := NewMemory()
		for k := range batches {
			if err := m.Observe("cut", ids[k], g, oracle); err != nil {
				b.Fatal(err)
			}
		}
		var sc MemoryScores
		b.ReportAllocs()
		for b.Loop() {
			if err := m.Scores("cut", &sc); err != nil {
				b.Fatal(err)
			}
		}
	})
}
