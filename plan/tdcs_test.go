package plan

import (
	"math"
	"testing"
)

// TestTDCSByHand: T-DCS of hand-worked cases (DCS = 1/(1 + √(½AP² +
// ½ΔMP²)), AP = 2·leak, a tuned attacker's figure standing for its
// attack's), and NaN where nothing can be scored.
func TestTDCSByHand(t *testing.T) {
	for _, c := range []struct {
		name      string
		leak      map[string]float64
		mp, ref   float64
		want      float64
		tolerance float64
	}{
		// norm: AP 0.2, ΔMP −0.05: 1/(1 + √0.02125) = 0.8727720…;
		// cosine by its tuned figure 0.4: AP 0.8: 1/(1 + √0.32125) =
		// 0.6382485…; mean 0.7555102….
		{"tuned stands for its attack", map[string]float64{"norm": 0.1, "cosine": 0.3, "cosine_tuned": 0.4}, 0.80, 0.85, 0.7555102, 1e-6},
		// A tuned attacker alone counts as its attack: AP 1, ΔMP 0:
		// 1/(1 + √½) = 0.5857864….
		{"tuned alone", map[string]float64{"spectral_tuned": 0.5}, 0.7, 0.7, 0.5857864, 1e-6},
		// Nothing leaks and nothing is lost: 1.
		{"perfect", map[string]float64{"norm": 0}, 0.9, 0.9, 1, 0},
		{"NaN leaks skipped", map[string]float64{"norm": math.NaN(), "cosine": 0}, 0.9, 0.9, 1, 0},
		{"no figure", map[string]float64{"norm": math.NaN()}, 0.9, 0.9, math.NaN(), 0},
		{"no reference", map[string]float64{"norm": 0.1}, 0.9, math.NaN(), math.NaN(), 0},
	} {
		got := TDCS(c.leak, c.mp, c.ref)
		if math.IsNaN(c.want) != math.IsNaN(got) || (!math.IsNaN(c.want) && math.Abs(got-c.want) > c.tolerance) {
			t.Errorf("%s: T-DCS %v, want %v", c.name, got, c.want)
		}
	}
}

// TestTDCSFloorRecommends: with a T-DCS floor and no leak limit the
// cheapest row at or above the floor is recommended, and with none the
// closest are those of the largest T-DCS. Rows (validation AUC; norm's
// leak): the reference (0.85; 0.5), a (0.84; 0.05), b (0.70; 0):
// T-DCS a = 1/(1 + √(0.005 + 0.00005)) = 0.9336…, b = 1/(1 + √0.01125)
// = 0.9041…, the reference 1/(1 + √0.5) = 0.5858 (so a floor of 0.5
// needs no defence).
func TestTDCSFloorRecommends(t *testing.T) {
	rows := func() []Row {
		return []Row{
			{Index: 0, ValAUC: 0.85, Leak: map[string]float64{"norm": 0.5}, StrongestLeak: 0.5, Bound: 0.5},
			{Index: 1, ValAUC: 0.84, Leak: map[string]float64{"norm": 0.05}, StrongestLeak: 0.05, Bound: 0.05},
			{Index: 2, ValAUC: 0.70, Leak: map[string]float64{"norm": 0}, StrongestLeak: 0, Bound: 0},
		}
	}
	for _, c := range []struct {
		floor   float64
		best    int
		closest int
	}{{0.9, 1, -1}, {0.92, 1, -1}, {0.935, -1, 1}, {0.5, 0, -1}} {
		rs := rows()
		th := Threat{MinTDCS: c.floor}
		costs(rs, th)
		if math.Abs(rs[1].TDCS-0.93365) > 1e-4 || math.Abs(rs[2].TDCS-0.90411) > 1e-4 {
			t.Fatalf("T-DCS %v and %v, want 0.93365 and 0.90411", rs[1].TDCS, rs[2].TDCS)
		}
		best, closest := recommend(rs, th)
		if best != c.best {
			t.Errorf("floor %g: recommended %d, want %d", c.floor, best, c.best)
		}
		if c.closest >= 0 && (len(closest) == 0 || closest[0].Index != c.closest) {
			t.Errorf("floor %g: closest %+v, want row %d first", c.floor, closest, c.closest)
		}
	}
	// Both limits: the leak limit 0.01 leaves b only.
	rs := rows()
	th := Threat{MaxLeak: 0.01, MinTDCS: 0.9}
	costs(rs, th)
	if best, _ := recommend(rs, th); best != 2 {
		t.Errorf("both limits: recommended %d, want 2", best)
	}
}
