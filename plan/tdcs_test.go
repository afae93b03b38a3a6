package plan

import (
	"math"
	"testing"
)

// The T-DCS of hand-computed cases: DCS = 1/(1 + √(½·AP² + ½·ΔMP²)),
// AP = 2·leak, averaged over the attacks (values from a calculator:
// 1/(1+√0.0208) = 0.8739562387, 1/(1+√0.0808) = 0.7786625239).
func TestTDCSHandComputed(t *testing.T) {
	for _, c := range []struct {
		name      string
		leak      map[string]float64
		val, ref  float64
		want      float64
		wantIsNaN bool
	}{
		{"two attacks, cost 0.04", map[string]float64{"norm": 0.1, "spectral": 0.2}, 0.76, 0.80, (0.8739562387473859 + 0.7786625238565732) / 2, false},
		{"ideal: no leak, no cost", map[string]float64{"norm": 0}, 0.9, 0.9, 1, false},
		{"a better model costs as much as a worse one", map[string]float64{"norm": 0.1}, 0.84, 0.80, 0.8739562387473859, false},
		{"no reference", map[string]float64{"norm": 0.1}, 0.8, math.NaN(), 0, true},
		{"no attack", map[string]float64{}, 0.8, 0.8, 0, true},
	} {
		got := TDCS(c.leak, c.val, c.ref)
		if c.wantIsNaN {
			if !math.IsNaN(got) {
				t.Errorf("%s: %v, want NaN", c.name, got)
			}
			continue
		}
		if math.Abs(got-c.want) > 1e-12 {
			t.Errorf("%s: %.12f, want %.12f", c.name, got, c.want)
		}
	}
}

// A T-DCS floor instead of a leak ceiling: the floor decides which
// settings meet the limit, the cheapest of them is recommended, and
// without one the closest are those of the largest T-DCS.
func TestTDCSFloorJudgesAndRecommends(t *testing.T) {
	mk := func(i int, val, leakA, leakB float64) Row {
		r := Row{Index: i, ValAUC: val, Cost: 0.80 - val, Leak: map[string]float64{"a": leakA, "b": leakB}}
		r.Setting.Protect = string(rune('p' + i))
		strongest(&r)
		return r
	}
	rows := []Row{
		mk(0, 0.80, 0.30, 0.40), // reference: T-DCS 1/(1+√(½·0.36)) and 1/(1+√(½·0.64)) → 0.6548
		mk(1, 0.76, 0.10, 0.20), // 0.8263 (see TestTDCSHandComputed)
		mk(2, 0.70, 0.00, 0.05), // DCS 1/(1+√0.005) = 0.93398 and 1/(1+√(0.005+0.005)) = 0.90909: 0.92153
	}
	Threat{MinTDCS: 0.8}.judge(rows)
	wantTDCS := []float64{(1/(1+math.Sqrt(0.18)) + 1/(1+math.Sqrt(0.32))) / 2, 0.8263093813019795, (1/(1+math.Sqrt(0.005)) + 1/(1+math.Sqrt(0.01))) / 2}
	wantMet := []bool{false, true, true}
	for i, r := range rows {
		if math.Abs(r.TDCS-wantTDCS[i]) > 1e-12 || r.Met != wantMet[i] {
			t.Errorf("row %d: T-DCS %.6f met %v, want %.6f %v", i, r.TDCS, r.Met, wantTDCS[i], wantMet[i])
		}
	}
	if best, _ := recommend(rows, Threat{MinTDCS: 0.8}); best != 1 {
		t.Errorf("floor 0.8: recommended row %d, want 1 (the cheaper of the two above the floor)", best)
	}
	// Both limits: row 1's strongest leak 0.2 is above 0.1, so only row 2.
	both := Threat{MaxLeak: 0.1, MinTDCS: 0.8}
	both.judge(rows)
	if best, _ := recommend(rows, both); best != 2 {
		t.Errorf("leak 0.1 and floor 0.8: recommended row %d, want 2", best)
	}
	// A floor nobody reaches: the closest are by T-DCS, largest first.
	high := Threat{MinTDCS: 0.95}
	high.judge(rows)
	best, closest := recommend(rows, high)
	if best != -1 || len(closest) != 3 || closest[0].Index != 2 || closest[1].Index != 1 || closest[2].Index != 0 {
		t.Errorf("floor 0.95: recommended %d, closest %v, want none and rows 2, 1, 0", best, closest)
	}
}
