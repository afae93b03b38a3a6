package integrity

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/splitguard/splitguard/tensor"
)

// TestDefaultSetIsReplayAtOne pins the default set and its alarm
// threshold, which docs/methods/integrity.md §11f justifies.
func TestDefaultSetIsReplayAtOne(t *testing.T) {
	if got := DefaultDetectors(); !slices.Equal(got, []string{"replay"}) {
		t.Fatalf("default detectors %v, want [replay]", got)
	}
	if v, ok := DefaultAlarm("replay"); !ok || v != 1 {
		t.Errorf("replay's default alarm %g %t, want 1", v, ok)
	}
	if _, ok := DefaultAlarm("collapse"); ok {
		t.Error("collapse has a default alarm; it is not in the default set")
	}
}

// batchCase is one training batch fed to the default guard by hand.
type batchCase struct {
	name string
	rows []int
	e    *tensor.Matrix
	want bool // an alarm
}

// TestDefaultAlarmOnHandBuiltBatches feeds hand-built embeddings through
// a guard of the default set at its default alarm thresholds, no stop
// threshold: an exact replay of a batch for other rows alarms (also with
// its rows permuted), a copy with one value changed by 1e-3 relative
// does not (exact equality by design), the same rows sent alike again
// (a bottom that did not move) do not, a constant batch alarms from the
// second one of other rows on, and fresh Gaussian batches never do. No
// alarm ends the run (Batch returns no error).
func TestDefaultAlarmOnHandBuiltBatches(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	rowsOf := func(from int) []int {
		r := make([]int, 8)
		for i := range r {
			r[i] = from + i
		}
		return r
	}
	a := randBatch(rng, 8, 5)
	permuted := tensor.New(8, 5)
	for i, r := range rng.Perm(8) {
		copy(permuted.Data[i*5:(i+1)*5], a.Data[r*5:(r+1)*5])
	}
	nudged := clone(nil, a)
	nudged.Data[3*5+2] *= 1 + 1e-3
	constant := func() *tensor.Matrix {
		m := tensor.New(8, 5)
		for i := range m.Data {
			m.Data[i] = float32(i%5) * 0.25
		}
		return m
	}
	cases := []batchCase{
		{"a fresh batch", rowsOf(0), a, false},
		{"the same rows, the same embedding (a bottom that did not move)", rowsOf(0), clone(nil, a), false},
		{"the same embedding for other rows", rowsOf(8), clone(nil, a), true},
		{"its rows permuted, for other rows", rowsOf(16), permuted, true},
		{"one value 1e-3 larger (relative), other rows", rowsOf(24), nudged, false},
		{"a first constant batch", rowsOf(32), constant(), false},
		{"a second constant batch, other rows", rowsOf(40), constant(), true},
	}
	for i := range 200 {
		cases = append(cases, batchCase{"a Gaussian batch", rowsOf(48 + 8*i), randBatch(rng, 8, 5), false})
	}
	g, err := NewGuard(DefaultDetectors(), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	g.SetAlarms(map[string]float64{"replay": 1})
	for step, c := range cases {
		scores, err := g.BatchRows(int64(step), c.rows, c.e)
		if err != nil {
			t.Fatalf("%s: an alarm threshold ended the run: %v", c.name, err)
		}
		raised := g.Raised()
		if got := len(raised) == 1; got != c.want || len(raised) > 1 {
			t.Errorf("step %d, %s: alarms %v (score %v), want an alarm %t", step, c.name, raised, scores, c.want)
			continue
		}
		if c.want {
			a := raised[0]
			if a.Detector != "replay" || a.Step != int64(step) || a.Score != 1 || a.Threshold != 1 ||
				!strings.Contains(a.Error(), "stale replay") {
				t.Errorf("step %d: alarm %+v (%v)", step, a, a)
			}
		}
	}
}

// TestReplayDetectorAgainstBruteForce checks the detector's score on a
// stream of batches with exact replays, same-rows repeats and tiny
// changes against a brute-force search: sort each batch's rows, find the
// first earlier batch whose sorted rows are equal, and fire when its set
// of row IDs differs from this one's.
func TestReplayDetectorAgainstBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	type batch struct {
		rows []int
		e    *tensor.Matrix
	}
	var stream []batch
	for i := range 300 {
		rows := rng.Perm(64)[:6]
		var e *tensor.Matrix
		switch k := rng.IntN(4); {
		case i < 5 || k == 0:
			e = randBatch(rng, 6, 19) // 19: two rounds of four lanes, a pair and an odd value
		case k == 1: // an earlier batch's embedding, for fresh rows
			e = clone(nil, stream[rng.IntN(i)].e)
		case k == 2: // an earlier batch again, its own rows
			b := stream[rng.IntN(i)]
			rows, e = slices.Clone(b.rows), clone(nil, b.e)
		default: // an earlier batch with one value changed by 1e-6
			e = clone(nil, stream[rng.IntN(i)].e)
			e.Data[rng.IntN(len(e.Data))] += 1e-6
		}
		stream = append(stream, batch{rows, e})
	}
	sortedRows := func(e *tensor.Matrix) [][]float32 {
		out := make([][]float32, e.Rows)
		for r := range out {
			out[r] = e.Data[r*e.Cols : (r+1)*e.Cols]
		}
		slices.SortFunc(out, slices.Compare)
		return out
	}
	equal := func(a, b [][]float32) bool { return slices.EqualFunc(a, b, slices.Equal) }
	d := mustDetector(t, "replay").(RowsDetector)
	fired := 0
	for i, b := range stream {
		want := 0.0
		cur := sortedRows(b.e)
		for j := range i {
			if equal(sortedRows(stream[j].e), cur) {
				a, c := slices.Sorted(slices.Values(stream[j].rows)), slices.Sorted(slices.Values(b.rows))
				if !slices.Equal(a, c) {
					want = 1
				}
				break
			}
		}
		if got := d.ObserveRows(int64(i), b.rows, b.e); got != want {
			t.Fatalf("batch %d: score %g, brute force %g", i, got, want)
		}
		fired += int(want)
	}
	if fired < 30 {
		t.Fatalf("only %d replays in the stream: the test does not exercise the detector", fired)
	}
}

// TestRowsHashIsOrderInvariant checks that a permutation of a set of row
// IDs hashes alike, and another set (one ID changed, one dropped) not.
func TestRowsHashIsOrderInvariant(t *testing.T) {
	rows := []int{5, 9, 1, 300, 42}
	h := RowsHash(rows)
	if RowsHash([]int{300, 1, 42, 5, 9}) != h {
		t.Error("a permutation changes the hash")
	}
	if RowsHash([]int{5, 9, 1, 301, 42}) == h || RowsHash(rows[:4]) == h {
		t.Error("another set hashes alike")
	}
}

// TestCollapseIgnoresOneRowBatches: a batch of one row (a schedule's
// short last batch) has no within-batch variance; the collapse detector
// scores it 0 and leaves it out of its history, where it used to score 1.
func TestCollapseIgnoresOneRowBatches(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	d := mustDetector(t, "collapse")
	for step := range collapseWarmup + 5 {
		d.Observe(int64(step), randBatch(rng, 32, 4))
	}
	if got := d.Observe(99, randBatch(rng, 1, 4)); got != 0 {
		t.Errorf("a one-row batch scored %g, want 0", got)
	}
	// the history is the five batches after the warm-up;
	// a batch of half their mean variance scores ½ (±sampling)
	hist := d.(*collapse).sum / d.(*collapse).n
	half := randBatch(rng, 4096, 4)
	for i := range half.Data {
		half.Data[i] *= float32(math.Sqrt(hist / 2))
	}
	if got := d.Observe(100, half); math.Abs(got-0.5) > 0.05 {
		t.Errorf("a batch of half the history's variance scored %g, want ≈ 0.5", got)
	}
}
