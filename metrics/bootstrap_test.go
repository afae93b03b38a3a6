package metrics

import (
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
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

var (
	bootScores = []float64{0.1, 0.4, 0.4, 0.35, 0.8, math.Copysign(0, -1), 0, math.Inf(1), 0.4, 0.9, math.Inf(-1), 0.2}
	bootLabels = []uint8{0, 1, 0, 1, 1, 0, 1, 0, 1, 1, 0, 0}
)

// TestBootSampleSorted: the sample is the rows in score order, each tie
// group (−0 and 0 are one, 0.4 thrice) holding its rows' labels.
func TestBootSampleSorted(t *testing.T) {
	s, err := newBootSample(bootScores, bootLabels)
	if err != nil {
		t.Fatal(err)
	}
	// By hand: -Inf(n) 0,-0 (p,n) 0.1(n) 0.2(n) 0.35(p) 0.4×3 (p,n,p) 0.8(p) 0.9(p) +Inf(n).
	wantEnds := []int{1, 3, 4, 5, 6, 9, 10, 11, 12}
	var ends []int
	for k, l := range s.last {
		if l {
			ends = append(ends, k+1)
		}
	}
	wantPos := [][]uint64{{0}, {0, 1}, {0}, {0}, {1}, {0, 1, 1}, {1}, {1}, {0}}
	if !slices.Equal(ends, wantEnds) {
		t.Fatalf("groups end at %v, want %v", ends, wantEnds)
	}
	start := 0
	for g, end := range ends {
		got := slices.Clone(s.pos[start:end])
		slices.Sort(got)
		if !slices.Equal(got, wantPos[g]) {
			t.Errorf("group %d holds %v, want %v", g, got, wantPos[g])
		}
		start = end
	}
}

// TestBootstrapReplicatesByHand: every replicate's AUC equals the AUC,
// counted pair by pair, of the sample it draws materialised (each sorted
// row repeated its weight's number of times), on scores with ties, ±0
// and infinities.
func TestBootstrapReplicatesByHand(t *testing.T) {
	s, err := newBootSample(bootScores, bootLabels)
	if err != nil {
		t.Fatal(err)
	}
	sorted := slices.Clone(bootScores)
	slices.Sort(sorted)
	w := make([]uint32, len(sorted))
	checked := 0
	for r := range uint64(200) {
		got := s.replicate(9, r)
		weights(replicateRNG(9, r), len(w), func(k int, v uint32) { w[k] = v })
		var ms []float64
		var my []uint8
		for k := range sorted {
			for range w[k] {
				ms = append(ms, sorted[k])
				my = append(my, uint8(s.pos[k]))
			}
		}
		if !slices.Contains(my, 0) || !slices.Contains(my, 1) {
			if !math.IsNaN(got) {
				t.Fatalf("replicate %d lacks a class but has AUC %v", r, got)
			}
			continue
		}
		if want := pairAUC(ms, my); got != want {
			t.Fatalf("replicate %d (weights %v): AUC %v, the materialised sample's %v", r, w, got, want)
		}
		checked++
	}
	if checked < 150 {
		t.Fatalf("only %d of 200 replicates held both classes", checked)
	}
}

// TestPoissonWeights: the weights' mean and variance are 1, and P(0) is
// 1/e, over 200,000 draws (within 5 standard errors).
func TestPoissonWeights(t *testing.T) {
	w := make([]uint32, 200000)
	weights(rand.New(rand.NewPCG(1, 1)), len(w), func(k int, v uint32) { w[k] = v })
	var sum, sq, zeros float64
	for _, v := range w {
		sum += float64(v)
		sq += float64(v) * float64(v)
		if v == 0 {
			zeros++
		}
	}
	n := float64(len(w))
	mean, variance, p0 := sum/n, sq/n-(sum/n)*(sum/n), zeros/n
	if math.Abs(mean-1) > 5/math.Sqrt(n) || math.Abs(variance-1) > 5*math.Sqrt(3/n) || math.Abs(p0-math.Exp(-1)) > 5*math.Sqrt(0.25/n) {
		t.Errorf("mean %.4f, variance %.4f, P(0) %.4f; want 1, 1, %.4f", mean, variance, p0, math.Exp(-1))
	}
}

// TestBootstrapIntervalWidth: on 4,000 rows of a binormal model, the
// 95% interval holds the AUC and its width is within 25% of the normal
// approximation's 2·1.96·SE with Hanley and McNeil's (1982) SE; the same
// seed gives the same interval at any GOMAXPROCS (per-replicate streams).
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
	for _, procs := range []int{1, 3} {
		old := runtime.GOMAXPROCS(procs)
		again, err := AUCBootstrap(scores, labels, 1000, 0.95, 3)
		runtime.GOMAXPROCS(old)
		if err != nil || again != iv {
			t.Errorf("GOMAXPROCS %d: %+v, %v; want %+v", procs, again, err, iv)
		}
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
		{"one row a class", []float64{1, 2}, []uint8{1, 0}, 1000, 0.95}, // both classes in only (1−1/e)² ≈ 40% of replicates
	} {
		if _, err := AUCBootstrap(tc.scores, tc.labels, tc.b, tc.level, 1); err == nil {
			t.Errorf("%s: accepted", tc.name)
		}
	}
}

// TestPoissonThresholds: poisson draws k exactly for the u between the
// k−1-th and k-th thresholds, the branch-free count and the tail loop
// alike.
func TestPoissonThresholds(t *testing.T) {
	prev := uint64(0)
	for k, th := range poissonThresholds {
		for _, u := range []uint64{prev, (prev + th) / 2, th - 1} {
			if u < prev || u >= th {
				continue
			}
			if got := poisson(u); got != uint32(k) {
				t.Fatalf("u %d (between %d and %d): %d, want %d", u, prev, th, got, k)
			}
		}
		prev = th
	}
	if poissonThresholds[len(poissonThresholds)-1] != 1<<32 || len(poissonThresholds) < 10 {
		t.Fatalf("thresholds %v", poissonThresholds)
	}
}

// TestAUCDiffByHand: every paired replicate's difference equals the
// difference of the pair-counted AUCs of the two models on the sample it
// draws materialised (the same rows, the same copies); a model against
// itself gives [0, 0].
func TestAUCDiffByHand(t *testing.T) {
	other := []float64{0.3, 0.2, 0.5, 0.6, 0.6, 0.1, 0.9, 0.2, 0.7, 0.4, 0.0, 0.6}
	sa, _ := newPairedSample(bootScores, bootLabels)
	sb, _ := newPairedSample(other, bootLabels)
	w := make([]uint32, len(bootScores))
	checked := 0
	for r := range uint64(200) {
		weights(replicateRNG(4, r), len(w), func(k int, v uint32) { w[k] = v })
		var a, b []float64
		var y []uint8
		for i := range w {
			for range w[i] {
				a, b, y = append(a, bootScores[i]), append(b, other[i]), append(y, bootLabels[i])
			}
		}
		got := sa.weightedAUC(w) - sb.weightedAUC(w)
		if !slices.Contains(y, 0) || !slices.Contains(y, 1) {
			if !math.IsNaN(got) {
				t.Fatalf("replicate %d lacks a class but has a difference %v", r, got)
			}
			continue
		}
		if want := pairAUC(a, y) - pairAUC(b, y); math.Abs(got-want) > 1e-12 {
			t.Fatalf("replicate %d: difference %v, materialised %v", r, got, want)
		}
		checked++
	}
	if checked < 150 {
		t.Fatalf("only %d replicates held both classes", checked)
	}
	iv, err := AUCDiffBootstrap(bootScores, bootScores, bootLabels, 100, 0.95, 1)
	if err != nil || iv.Lo != 0 || iv.Hi != 0 {
		t.Fatalf("a model against itself: %+v, %v", iv, err)
	}
}

// TestIntegerCountsMatchFloat: weightedAUC, counting in integers, gives
// the bits of floatAUC, the float64 sums it replaces for samples of at
// most maxExactRows rows, on random samples with many ties and weights up
// to 20 (the largest a Poisson draw gives), and at the extreme of its
// range: 2²² rows of weight 20, half of each class, in one tie group and
// in groups of one (the numerator's largest values).
func TestIntegerCountsMatchFloat(t *testing.T) {
	type row struct {
		w, pos uint64
		last   bool
	}
	same := func(name string, rows func(yield func(row))) {
		t.Helper()
		var ia weightedAUC
		var fa floatAUC
		rows(func(r row) {
			ia.add(r.w, r.pos, r.last)
			fa.add(r.w, r.pos, r.last)
		})
		gi, gf := ia.auc(), fa.auc()
		if math.Float64bits(gi) != math.Float64bits(gf) && !(math.IsNaN(gi) && math.IsNaN(gf)) {
			t.Fatalf("%s: integer counts give %v (%x), float64 sums %v (%x)", name, gi, math.Float64bits(gi), gf, math.Float64bits(gf))
		}
	}
	rng := rand.New(rand.NewPCG(5, 6))
	for range 300 {
		n := 1 + rng.IntN(3000)
		tieP := rng.Float64()
		same("random", func(yield func(row)) {
			for k := range n {
				yield(row{w: uint64(rng.IntN(21)), pos: uint64(rng.IntN(2)), last: k == n-1 || rng.Float64() > tieP})
			}
		})
	}
	n := maxExactRows
	if testing.Short() {
		n = 1 << 16
	}
	for _, oneGroup := range []bool{false, true} {
		same("extreme", func(yield func(row)) {
			for k := range n {
				yield(row{w: 20, pos: uint64(k & 1), last: !oneGroup || k == n-1})
			}
		})
		same("extreme, negatives first", func(yield func(row)) {
			for k := range n {
				yield(row{w: 20, pos: uint64(2 * k / n), last: !oneGroup || k == n-1})
			}
		})
	}
	if !exactCounts(maxExactRows) || exactCounts(maxExactRows+1) {
		t.Fatal("exactCounts does not switch at maxExactRows")
	}
	// The bound itself: twice the largest numerator stays below 2⁵³.
	if w := 20.0 * maxExactRows; 2*(w/2)*(w/2) >= 1<<53 {
		t.Fatalf("maxExactRows %d is too large for exact float64 sums", maxExactRows)
	}
}

// TestAUCAndDiffBootstrapIsBoth: the two intervals from one set of
// replicates are AUCBootstrap's and AUCDiffBootstrap's to the bit, on
// scores with ties and on samples small enough that some replicates
// lose a class; the errors are theirs.
func TestAUCAndDiffBootstrapIsBoth(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, n := range []int{6, 12, 40, 1001} {
		a, b, y := make([]float64, n), make([]float64, n), make([]uint8, n)
		for i := range n {
			y[i] = uint8(i % 2)
			a[i] = float64(rng.IntN(8)) + float64(y[i])
			b[i] = float64(rng.IntN(5))
		}
		for _, seed := range []uint64{1, 99} {
			wantA, errA := AUCBootstrap(a, y, 300, 0.9, seed)
			wantD, errD := AUCDiffBootstrap(a, b, y, 300, 0.9, seed)
			gotA, gotD, err := AUCAndDiffBootstrap(a, b, y, 300, 0.9, seed)
			if errA != nil || errD != nil {
				if err == nil {
					t.Fatalf("n %d: no error where the two gave %v, %v", n, errA, errD)
				}
				continue
			}
			if err != nil || gotA != wantA || gotD != wantD {
				t.Fatalf("n %d seed %d: %+v, %+v (%v); want %+v, %+v", n, seed, gotA, gotD, err, wantA, wantD)
			}
		}
	}
	a, y := []float64{1, 2, 3, 4}, []uint8{0, 1, 0, 1}
	for _, b := range [][]float64{{1, 2, 3}, {1, math.NaN(), 3, 4}} {
		if _, _, err := AUCAndDiffBootstrap(a, b, y, 10, 0.9, 1); err == nil {
			t.Errorf("b %v accepted", b)
		}
	}
}
