package metrics

import (
	"cmp"
	"encoding/json"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol }

func TestAUCHandCases(t *testing.T) {
	for _, tc := range []struct {
		name   string
		scores []float64
		labels []uint8
		mask   []bool
		want   float64
		ok     bool
	}{
		{"sklearn example", []float64{0.1, 0.4, 0.35, 0.8}, []uint8{0, 0, 1, 1}, nil, 0.75, true},
		{"all tied", []float64{1, 1, 1, 1}, []uint8{0, 1, 0, 1}, nil, 0.5, true},
		// pairs (pos,neg): (.5,.5)=½ (.5,.2)=1 (.9,.5)=1 (.9,.2)=1 → 3.5/4
		{"one tie", []float64{0.5, 0.5, 0.2, 0.9}, []uint8{1, 0, 0, 1}, nil, 0.875, true},
		{"reversed, not flipped", []float64{3, 2, 1}, []uint8{0, 1, 1}, nil, 0, true},
		{"perfect", []float64{-1, 7, 2}, []uint8{0, 1, 1}, nil, 1, true},
		// pos {0,2} neg {1,3}: only (2,1) is ordered → 1/4
		{"unmasked", []float64{0, 1, 2, 3}, []uint8{1, 0, 1, 0}, nil, 0.25, true},
		// row 0 left out: pos {2} neg {1,3} → 1/2
		{"masked", []float64{0, 1, 2, 3}, []uint8{1, 0, 1, 0}, []bool{false, true, true, true}, 0.5, true},
		{"label 2 is positive", []float64{1, 2}, []uint8{0, 2}, nil, 1, true},
		{"no negative", []float64{1, 2}, []uint8{1, 1}, nil, 0, false},
		{"no positive", []float64{1, 2}, []uint8{0, 0}, nil, 0, false},
		{"mask drops the negatives", []float64{1, 2, 3}, []uint8{0, 1, 1}, []bool{false, true, true}, 0, false},
		{"empty", nil, nil, nil, 0, false},
	} {
		auc, ok := AUC(tc.scores, tc.labels, tc.mask)
		if ok != tc.ok || (ok && !near(auc, tc.want, 1e-15)) || (!ok && !math.IsNaN(auc)) {
			t.Errorf("%s: AUC = %v, %v; want %v, %v", tc.name, auc, ok, tc.want, tc.ok)
		}
	}
}

// bruteAUC is the definition: a loop over every (positive, negative) pair.
func bruteAUC(scores []float64, labels []uint8, mask []bool) float64 {
	var num, den float64
	for i := range scores {
		if labels[i] == 0 || (mask != nil && !mask[i]) {
			continue
		}
		for j := range scores {
			if labels[j] != 0 || (mask != nil && !mask[j]) {
				continue
			}
			den++
			switch {
			case scores[i] > scores[j]:
				num++
			case scores[i] == scores[j]:
				num += 0.5
			}
		}
	}
	return num / den
}

func TestAUCAgainstBruteForce(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	var sc Scratch
	for trial := range 200 {
		n := 2 + r.IntN(60)
		scores := make([]float64, n)
		labels := make([]uint8, n)
		mask := make([]bool, n)
		levels := 1 + r.IntN(8) // few levels: many ties
		for i := range n {
			scores[i] = float64(r.IntN(levels)) + 0.25*float64(trial%2)*r.Float64()
			labels[i] = uint8(r.IntN(2))
			mask[i] = r.IntN(4) != 0
		}
		labels[0], labels[1], mask[0], mask[1] = 0, 1, true, true
		for _, m := range [][]bool{nil, mask} {
			got, ok := sc.AUC(scores, labels, m)
			want := bruteAUC(scores, labels, m)
			if !ok || !near(got, want, 1e-12) {
				t.Fatalf("trial %d: AUC = %v (ok %v), brute force %v", trial, got, ok, want)
			}
		}
	}
}

func TestAUCIndependentScoresNearHalf(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	n := 20000
	scores := make([]float64, n)
	labels := make([]uint8, n)
	for i := range n {
		scores[i] = r.NormFloat64()
		labels[i] = uint8(r.IntN(2))
	}
	auc, _ := AUC(scores, labels, nil)
	// The AUC's standard deviation under independence is about
	// sqrt((n+1)/(12·n/2·n/2)) ≈ 0.004 here; allow 5σ.
	if !near(auc, 0.5, 0.02) {
		t.Fatalf("AUC of independent scores = %v, want ≈ 0.5", auc)
	}
}

func TestAUCAllocatesNothingWithScratch(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	scores := make([]float64, 1024)
	labels := make([]uint8, 1024)
	for i := range scores {
		scores[i] = r.Float64()
		labels[i] = uint8(i % 3 % 2)
	}
	var sc Scratch
	sc.AUC(scores, labels, nil)
	if a := testing.AllocsPerRun(20, func() { sc.AUC(scores, labels, nil) }); a != 0 {
		t.Fatalf("Scratch.AUC allocates %v times per call", a)
	}
	l := NewLeak()
	l.Observe("norm", "cut", scores, labels, nil)
	if a := testing.AllocsPerRun(20, func() { l.Observe("norm", "cut", scores, labels, nil) }); a != 0 {
		t.Fatalf("Leak.Observe allocates %v times per call", a)
	}
}

func TestAUCPanicsOnLengthMismatch(t *testing.T) {
	for _, f := range []func(){
		func() { AUC([]float64{1, 2}, []uint8{1}, nil) },
		func() { AUC([]float64{1, 2}, []uint8{1, 0}, []bool{true}) },
	} {
		func() {
			defer func() {
				if r := recover(); r == nil || !strings.Contains(r.(string), "metrics: AUC") {
					t.Errorf("recover() = %v, want a metrics: AUC panic", r)
				}
			}()
			f()
		}()
	}
}

func TestNearestRankQuantile(t *testing.T) {
	wiki1 := []float64{50, 15, 40, 20, 35} // unsorted on purpose
	wiki2 := []float64{3, 6, 7, 8, 8, 10, 13, 15, 16, 20}
	one20 := make([]float64, 20)
	one100 := make([]float64, 100)
	for i := range one100 {
		one100[i] = float64(i + 1)
		if i < 20 {
			one20[i] = float64(i + 1)
		}
	}
	for _, tc := range []struct {
		x    []float64
		q    float64
		want float64
	}{
		{wiki1, 0.05, 15}, {wiki1, 0.30, 20}, {wiki1, 0.40, 20}, {wiki1, 0.50, 35}, {wiki1, 1, 50},
		{wiki2, 0, 3}, {wiki2, 0.25, 7}, {wiki2, 0.50, 8}, {wiki2, 0.75, 15}, {wiki2, 1, 20},
		{one20, 0.95, 19}, {one100, 0.95, 95}, {one100[:10], 0.95, 10}, {[]float64{4}, 0.95, 4},
	} {
		got, err := Quantile(tc.x, tc.q)
		if err != nil || got != tc.want {
			t.Errorf("Quantile(%v, %v) = %v, %v; want %v", tc.x, tc.q, got, err, tc.want)
		}
	}
	if wiki1[0] != 50 {
		t.Error("Quantile modified its input")
	}
	for _, bad := range []struct {
		x []float64
		q float64
	}{{nil, 0.5}, {[]float64{1}, -0.1}, {[]float64{1}, 1.1}, {[]float64{1}, math.NaN()}, {[]float64{1, math.NaN()}, 0.5}} {
		if _, err := Quantile(bad.x, bad.q); err == nil {
			t.Errorf("Quantile(%v, %v): no error", bad.x, bad.q)
		}
	}
}

func TestACEHandCases(t *testing.T) {
	for _, tc := range []struct {
		name   string
		probs  []float64
		labels []uint8
		bins   int
		want   float64
	}{
		// bins {.1,.2} rate 0 mean .15; {.3,.4} rate 1 mean .35 → (.15+.65)/2
		{"two even bins", []float64{0.1, 0.2, 0.3, 0.4}, []uint8{0, 0, 1, 1}, 2, 0.4},
		// sorted .1(0) .3(0) .5(1) | .7(0) .9(1): |1/3−.3| and |.5−.8|
		{"5 into 2: sizes 3,2", []float64{0.9, 0.1, 0.5, 0.3, 0.7}, []uint8{1, 0, 1, 0, 0}, 2, (1.0/3 - 0.3 + 0.3) / 2},
		{"more bins than examples", []float64{0.2, 0.6}, []uint8{1, 0}, 10, 0.7},
		{"one bin", []float64{0.2, 0.4, 0.9}, []uint8{0, 1, 1}, 1, 2.0/3 - 0.5},
		{"calibrated", []float64{0.5, 0.5, 0.5, 0.5}, []uint8{1, 0, 0, 1}, 1, 0},
		// 7 into 3: sizes 3,2,2 → {.1,.2,.3}(0,0,1) {.4,.5}(0,1) {.6,.7}(1,1)
		{"7 into 3", []float64{0.7, 0.6, 0.5, 0.4, 0.3, 0.2, 0.1}, []uint8{1, 1, 1, 0, 1, 0, 0}, 3,
			(math.Abs(1.0/3-0.2) + math.Abs(0.5-0.45) + math.Abs(1-0.65)) / 3},
	} {
		got, err := ACE(tc.probs, tc.labels, tc.bins)
		if err != nil || !near(got, tc.want, 1e-12) {
			t.Errorf("%s: ACE = %v, %v; want %v", tc.name, got, err, tc.want)
		}
	}
	for _, bad := range []struct {
		p    []float64
		l    []uint8
		bins int
	}{{nil, nil, 2}, {[]float64{0.5}, []uint8{1}, 0}, {[]float64{0.5}, nil, 2}, {[]float64{1.5}, []uint8{1}, 2}, {[]float64{math.NaN()}, []uint8{1}, 2}} {
		if _, err := ACE(bad.p, bad.l, bad.bins); err == nil {
			t.Errorf("ACE(%v, %v, %d): no error", bad.p, bad.l, bad.bins)
		}
	}
}

func TestBCE(t *testing.T) {
	for _, tc := range []struct {
		probs  []float64
		labels []uint8
		want   float64
	}{
		{[]float64{0.5}, []uint8{1}, math.Ln2},
		{[]float64{0.8, 0.25}, []uint8{1, 0}, -(math.Log(0.8) + math.Log(0.75)) / 2},
		{[]float64{0}, []uint8{1}, -math.Log(1e-7)},
		{[]float64{1}, []uint8{0}, -math.Log(1e-7)},
		{[]float64{1}, []uint8{1}, 1e-7},
	} {
		got, err := BCE(tc.probs, tc.labels)
		if err != nil || !near(got, tc.want, 1e-9*math.Max(1, tc.want)) {
			t.Errorf("BCE(%v, %v) = %v, %v; want %v", tc.probs, tc.labels, got, err, tc.want)
		}
	}
	if _, err := BCE([]float64{-0.1}, []uint8{0}); err == nil {
		t.Error("BCE of a negative probability: no error")
	}
}

func TestLeakSummary(t *testing.T) {
	l := NewLeak()
	for i := range 20 {
		l.Add("norm", "cut", 0.5+float64(i)/100, 1, 1, true)
	}
	l.Add("norm", "cut", 0, 0, 0, false)
	for _, a := range []float64{0.2, 0.6, 0.9, 0.45} {
		l.Add("cosine", "first", a, 1, 3, true)
	}
	l.Add("spectral", "cut", math.NaN(), 2, 2, true)
	l.Add("spectral", "cut", 0, 0, 0, false)

	for _, tc := range []struct {
		attack, layer string
		want          LeakSummary
	}{
		// 0.50…0.69: rank 19 → 0.68; |·−½| 0…0.19 → 0.18; mean 0.595
		// every batch (1,1): |A − ½| = ½ by chance alone
		{"norm", "cut", LeakSummary{Q95: 0.68, Q95Abs: 0.18, ChanceQ95Abs: 0.5, Mean: 0.595, Batches: 20, Skipped: 1}},
		// sorted .2 .45 .6 .9: rank ⌈3.8⌉=4 → .9; |·−½| .05 .1 .3 .4 → .4
		// (1,3): |A − ½| = ½ with probability ½
		{"cosine", "first", LeakSummary{Q95: 0.9, Q95Abs: 0.4, ChanceQ95Abs: 0.5, Mean: 2.15 / 4, Batches: 4}},
	} {
		got := l.Summary(tc.attack, tc.layer)
		w := tc.want
		if !near(got.Q95, w.Q95, 1e-12) || !near(got.Q95Abs, w.Q95Abs, 1e-12) || !near(got.Mean, w.Mean, 1e-12) ||
			!near(got.ChanceQ95Abs, w.ChanceQ95Abs, 1e-8) ||
			got.Batches != w.Batches || got.Skipped != w.Skipped {
			t.Errorf("%s/%s: %+v, want %+v", tc.attack, tc.layer, got, w)
		}
	}
	if s := l.Series("cosine", "first"); len(s) != 4 || s[0] != 0.2 || s[3] != 0.45 {
		t.Errorf("series not kept in order: %v", s)
	}
	keys := l.Keys()
	if strings.Join(keys, ",") != "cosine/first,norm/cut,spectral/cut" {
		t.Errorf("Keys() = %v", keys)
	}

	b, err := json.Marshal(l.Summaries())
	if err != nil {
		t.Fatal(err)
	}
	var raw map[string]map[string]any
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	sp := raw["spectral/cut"]
	if sp["q95"] != nil || sp["q95_abs"] != nil || sp["chance_q95_abs"] != nil || sp["mean"] != nil || sp["batches"] != 0.0 || sp["skipped"] != 2.0 {
		t.Errorf("all-skipped series encodes as %s", b)
	}
	nc := raw["norm/cut"]
	for _, k := range []string{"q95", "q95_abs", "chance_q95_abs", "mean", "batches", "skipped"} {
		if _, ok := nc[k]; !ok {
			t.Errorf("JSON lacks %q: %s", k, b)
		}
	}
	var back map[string]LeakSummary
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back["norm/cut"].Q95 != l.Summary("norm", "cut").Q95 || !math.IsNaN(back["spectral/cut"].Mean) {
		t.Errorf("round trip: %+v", back)
	}
	if a, ly, ok := SplitKey("hint5_inner/2"); !ok || a != "hint5_inner" || ly != "2" {
		t.Errorf("SplitKey = %q %q %v", a, ly, ok)
	}
}

// TestAUCSpecialScores checks AUC against the pair-by-pair definition
// under cmp.Compare's order — every NaN below −∞ and tied with the other
// NaNs, −0 tied with +0 — on scores drawn from NaN, ±∞, ±0, subnormals and
// numbers of both signs.
func TestAUCSpecialScores(t *testing.T) {
	special := []float64{math.NaN(), math.Inf(-1), math.Inf(1), 0, math.Copysign(0, -1),
		5e-324, -5e-324, -1e300, 1e300, -2.5, -0.5, 0.5, 2.5, math.Float64frombits(0x7ff8000000000001)}
	r := rand.New(rand.NewPCG(8, 9))
	var sc Scratch
	for trial := range 300 {
		n := 2 + r.IntN(40)
		scores := make([]float64, n)
		labels := make([]uint8, n)
		for i := range n {
			scores[i] = special[r.IntN(len(special))]
			labels[i] = uint8(r.IntN(2))
		}
		labels[0], labels[1] = 0, 1
		var num, den float64
		for i := range n {
			for j := range n {
				if labels[i] == 0 || labels[j] != 0 {
					continue
				}
				den++
				switch cmp.Compare(scores[i], scores[j]) {
				case 1:
					num++
				case 0:
					num += 0.5
				}
			}
		}
		got, ok := sc.AUC(scores, labels, nil)
		if !ok || got != num/den {
			t.Fatalf("trial %d: AUC = %v (ok %v), by pairs %v; scores %v labels %v", trial, got, ok, num/den, scores, labels)
		}
	}
}
