package plan

import (
	"math"
	"slices"
	"testing"

	"github.com/splitguard/splitguard/metrics"
	"github.com/splitguard/splitguard/rundir"
)

// handSE is Hanley and McNeil's standard error worked by hand for the
// reference below (validation AUC 0.85, 30 positives, 70 negatives):
// Q1 = 0.85/1.15 = 0.739130, Q2 = 2·0.7225/1.85 = 0.781081,
// SE² = (0.1275 + 29·(Q1 − 0.7225) + 69·(Q2 − 0.7225)) / 2100 = 0.0022152,
// SE = 0.047066.
const handSE = 0.047066

// frontier is a hand-built frontier at the limit 0.4: a (cost −0.002,
// bound 0.398) is the noise-cheapest and sits at the limit; b (cost 0.01,
// bound 0.25) and c (cost 0.03, bound 0.30) are within the standard error
// of it; d (cost 0.10, bound 0.05) is not; the reference leaks 0.5.
func frontier(valRows, valPos int) []Row {
	row := func(i int, val, bound float64) Row {
		return Row{Index: i, Setting: Setting{Protect: string(rune('a' + i - 1))}, ValAUC: val, StrongestLeak: bound, Bound: bound,
			Leak: map[string]float64{"norm": bound}, Batches: 200, ValRows: valRows, ValPositives: valPos}
	}
	return []Row{row(0, 0.85, 0.5), row(1, 0.852, 0.398), row(2, 0.84, 0.25), row(3, 0.82, 0.30), row(4, 0.75, 0.05)}
}

// TestTieRuleTakesTheMargin: with the standard error the tie rule picks
// b, the widest margin among the settings within 0.047 of the cheapest,
// then c, then a (d costs more than a + SE), then d; without the
// validation counts (a plan.csv of an earlier version) the cheapest comes
// first: a, b, c, d.
func TestTieRuleTakesTheMargin(t *testing.T) {
	th := Threat{MaxLeak: 0.4}
	for _, tc := range []struct {
		valRows, valPos int
		want            []string
	}{{100, 30, []string{"b", "c", "a", "d"}}, {0, 0, []string{"a", "b", "c", "d"}}} {
		rows := frontier(tc.valRows, tc.valPos)
		costs(rows, th)
		var got []string
		for _, i := range candidates(rows, th) {
			got = append(got, rows[i].Protect)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%d validation rows: order %q, want %q", tc.valRows, got, tc.want)
		}
		if best, _ := recommend(rows, th); rows[best].Protect != tc.want[0] {
			t.Errorf("%d validation rows: recommended %s, want %s", tc.valRows, rows[best].Protect, tc.want[0])
		}
	}
}

// TestTieThresholdIsTheSE: the threshold is the hand-worked standard error,
// and a setting whose cost exceeds the cheapest's by 1e-4 less than it is
// tied (and chosen for its margin) while one 1e-4 more is not.
func TestTieThresholdIsTheSE(t *testing.T) {
	rows := frontier(100, 30)
	if se := TieSE(rows[0]); math.Abs(se-handSE) > 1e-6 {
		t.Fatalf("TieSE = %.6f, want %.6f", se, handSE)
	}
	th := Threat{MaxLeak: 0.4}
	for _, tc := range []struct {
		over float64
		want string
	}{{-1e-4, "e"}, {1e-4, "a"}} {
		rs := []Row{rows[0], rows[1], rows[0]}
		rs[2].Index, rs[2].Protect = 2, "e"
		rs[2].ValAUC = rows[1].ValAUC - handSE - tc.over // cost −0.002 + SE + over
		rs[2].Bound, rs[2].StrongestLeak = 0.1, 0.1
		costs(rs, th)
		if best, _ := recommend(rs, th); rs[best].Protect != tc.want {
			t.Errorf("cost %+.4f over the tie threshold: recommended %s, want %s", tc.over, rs[best].Protect, tc.want)
		}
	}
}

// TestMinimumBatches: a setting whose per-batch attack scored 58 batches
// does not meet the limit however small its leak; with 59 it does.
func TestMinimumBatches(t *testing.T) {
	if MinLeakBatches != 59 {
		t.Fatalf("MinLeakBatches = %d, want 59 (1 − 0.95^58 < 0.95 ≤ 1 − 0.95^59)", MinLeakBatches)
	}
	th := Threat{MaxLeak: 0.4}
	for _, n := range []int{58, 59} {
		rows := frontier(100, 30)
		rows[2].Batches = n
		costs(rows, th)
		if rows[2].Met != (n >= 59) {
			t.Errorf("%d batches: met %v", n, rows[2].Met)
		}
	}
}

// TestLeakBoundFromSummary: the judged figure is the largest of the
// per-batch series' upper bounds (norm 0.31 at the cut, its tuned twin
// 0.33) and the epoch attack's q95 (memory_norm 0.2, whose bound over 9
// epochs is undefined); the batches the fewest of a per-batch series (120;
// the epoch attack's 9 epochs do not count).
func TestLeakBoundFromSummary(t *testing.T) {
	nan := math.NaN()
	s := &rundir.Summary{Leak: map[string]metrics.LeakSummary{
		"norm/cut":        {Q95Abs: 0.30, Q95AbsUpper: 0.31, Batches: 200},
		"norm/first":      {Q95Abs: 0.10, Q95AbsUpper: 0.12, Batches: 200},
		"norm_tuned/cut":  {Q95Abs: 0.32, Q95AbsUpper: 0.33, Batches: 120},
		"memory_norm/cut": {Q95Abs: 0.20, Q95AbsUpper: nan, Batches: 9},
	}}
	var r Row
	leakBound(&r, s)
	if r.Bound != 0.33 || r.Batches != 120 {
		t.Errorf("bound %v over %d batches, want 0.33 over 120", r.Bound, r.Batches)
	}
	s.Leak["memory_norm/cut"] = metrics.LeakSummary{Q95Abs: 0.40, Q95AbsUpper: nan, Batches: 9}
	if leakBound(&r, s); r.Bound != 0.40 {
		t.Errorf("bound %v, want the epoch attack's q95 0.40", r.Bound)
	}
	s.Leak["norm/first"] = metrics.LeakSummary{Q95Abs: 0.10, Q95AbsUpper: nan, Batches: 40}
	if leakBound(&r, s); r.Batches != 40 || leakOK(r, 0.5) {
		t.Errorf("40 batches: batches %d, within the limit %v; want 40, false", r.Batches, leakOK(r, 0.5))
	}
}
