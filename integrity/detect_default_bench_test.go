package integrity

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// BenchmarkDefaultGuard times the default detector set on one training
// batch (integrity.md §11f, its cost): batch × cut width as a Criteo
// run's (256 × 128, 8192 × 128) and a small table's (64 × 16).
func BenchmarkDefaultGuard(b *testing.B) {
	for _, sz := range [][2]int{{64, 16}, {256, 128}, {8192, 128}} {
		b.Run(fmt.Sprintf("%dx%d", sz[0], sz[1]), func(b *testing.B) {
			rng := rand.New(rand.NewPCG(1, 2))
			e := randBatch(rng, sz[0], sz[1])
			rows := rng.Perm(sz[0] * 10)[:sz[0]]
			g, err := NewGuard(DefaultDetectors(), nil, 0)
			if err != nil {
				b.Fatal(err)
			}
			g.SetAlarms(map[string]float64{"replay": 1})
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				e.Data[0] = float32(i) // a new batch each time
				if _, err := g.BatchRows(int64(i), rows, e); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
