package metrics

import (
	"math"
	"math/rand/v2"
	"testing"
)

// pairAUC is the AUC by counting (positive, negative) pairs, ties ½.
func pairAUC(s []float64, y []uint8) float64 {
	var num, den float64
	for i := range s {
		for j := range s {
			if y[i] == 1 && y[j] == 0 {
				den++
				switch {
				case s[i] > s[j]:
					num++
				case s[i] == s[j]:
					num += 0.5
				}
			}
		}
	}
	return num / den
}

// TestBootstrapReplicatesByHand: every replicate's AUC equals the AUC,
// counted pair by pair, of the data set the replicate draws (the same
// draws, materialised), on scores with ties, ±0 and infinities.
func TestBootstrapReplicatesByHand(t *testing.T) {
	scores := []float64{0.1, 0.4, 0.4, 0.35, 0.8, math.Copysign(0, -1), 0, math.Inf(1), 0.4, 0.9, math.Inf(-1), 0.2}
	labels := []uint8{0, 1, 0, 1, 1, 0, 1, 0, 1, 1, 0, 0}
	const b, seed = 50, 7
	got, err := bootstrapAUCs(scores, labels, b, seed)
	if err != nil {
		t.Fatal(err)
	}
	var pos, neg []int
	for i, y := range labels {
		if y == 1 {
			pos = append(pos, i)
		} else {
			neg = append(neg, i)
		}
	}
	rng := rand.New(rand.NewPCG(seed, 0x626f6f7473747261))
	for r := range b {
		var s []float64
		var y []uint8
		for range pos {
			i := pos[rng.IntN(len(pos))]
			s, y = append(s, scores[i]), append(y, 1)
		}
		for range neg {
			i := neg[rng.IntN(len(neg))]
			s, y = append(s, scores[i]), append(y, 0)
		}
		if want := pairAUC(s, y); got[r] != want {
			t.Fatalf("replicate %d: AUC %v, the materialised sample's %v", r, got[r], want)
		}
	}
}

// TestBootstrapIntervalWidth: on 4,000 rows of a binormal model, the
// 95% interval holds the AUC and its width is within 25% of the normal
// approximation's 2·1.96·SE with Hanley and McNeil's (1982) SE.
func TestBootstrapIntervalWidth(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	n := 4000
	scores, labels := make([]float64, n), make([]uint8, n)
	for i := range n {
		if rng.Float64() < 0.3 {
			labels[i] = 1
			scores[i] = 1 + rng.NormFloat64()
		} else {
			scores[i] = rng.NormFloat64()
		}
	}
	auc, _ := AUC(scores, labels, nil)
	iv, err := AUCBootstrap(scores, labels, 1000, 0.95, 3)
	if err != nil {
		t.Fatal(err)
	}
	var n1, n2 float64
	for _, y := range labels {
		if y == 1 {
			n1++
		} else {
			n2++
		}
	}
	q1, q2 := auc/(2-auc), 2*auc*auc/(1+auc)
	se := math.Sqrt((auc*(1-auc) + (n1-1)*(q1-auc*auc) + (n2-1)*(q2-auc*auc)) / (n1 * n2))
	width, want := iv.Hi-iv.Lo, 2*1.96*se
	t.Logf("AUC %.4f, bootstrap [%.4f, %.4f] (width %.4f), Hanley–McNeil width %.4f", auc, iv.Lo, iv.Hi, width, want)
	if !(iv.Lo < auc && auc < iv.Hi) || math.Abs(width-want) > 0.25*want {
		t.Errorf("interval [%.4f, %.4f] for AUC %.4f: width %.4f, the normal approximation's %.4f", iv.Lo, iv.Hi, auc, width, want)
	}
}

func TestBootstrapRefuses(t *testing.T) {
	for _, tc := range []struct {
		name   string
		scores []float64
		labels []uint8
		b      int
		level  float64
	}{
		{"one class", []float64{1, 2}, []uint8{1, 1}, 10, 0.95},
		{"NaN", []float64{1, math.NaN()}, []uint8{1, 0}, 10, 0.95},
		{"lengths", []float64{1}, []uint8{1, 0}, 10, 0.95},
		{"no replicate", []float64{1, 2}, []uint8{1, 0}, 0, 0.95},
		{"level", []float64{1, 2}, []uint8{1, 0}, 10, 1},
	} {
		if _, err := AUCBootstrap(tc.scores, tc.labels, tc.b, tc.level, 1); err == nil {
			t.Errorf("%s: accepted", tc.name)
		}
	}
}
