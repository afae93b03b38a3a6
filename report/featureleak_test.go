package report

import (
	"math"
	"testing"
)

func TestFeatureAPHandCases(t *testing.T) {
	for _, c := range []struct {
		name string
		fl   map[string]any
		want float64 // NaN: no figure
	}{
		{"numeric gain over own", map[string]any{"a/r2_mean": 0.4, "a/r2_own_mean": 0.1}, 0.3},
		{"own below the prior counts as the prior", map[string]any{"a/r2_mean": 0.4, "a/r2_own_mean": -0.2}, 0.4},
		{"worse than own is 0", map[string]any{"a/r2_mean": 0.05, "a/r2_own_mean": 0.1}, 0},
		// (0.5 − max(0.3, 0.2))/(1 − 0.3) = 2/7
		{"categorical share of the gain left", map[string]any{"a/acc_mean": 0.5, "a/acc_prior_mean": 0.3, "a/acc_own_mean": 0.2}, 2.0 / 7},
		{"both kinds averaged", map[string]any{"a/r2_mean": 0.6, "a/acc_mean": 0.5, "a/acc_prior_mean": 0.5}, 0.3},
		{"another attack's figures only", map[string]any{"b/r2_mean": 0.6}, math.NaN()},
	} {
		s := &Summary{Raw: map[string]any{"feature_leak_selected": c.fl}}
		got := featureAP("a")(s)
		switch {
		case math.IsNaN(c.want) && got != nil:
			t.Errorf("%s: %v, want no figure", c.name, *got)
		case !math.IsNaN(c.want) && (got == nil || math.Abs(*got-c.want) > 1e-12):
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
	// The final figures stand in for a run that selected no model.
	s := &Summary{Raw: map[string]any{"feature_leak_final": map[string]any{"a/r2_mean": 0.25}}}
	if got := featureAP("a")(s); got == nil || *got != 0.25 {
		t.Errorf("final figures: %v, want 0.25", got)
	}
}

// TestCDCSRanksBothSecrets: a defence of the labels that leaves the
// features open is overtaken, once feature attacks ran, by one that
// protects both less well each but better together; C-DCS is the mean of
// the two T-DCS, computed here from the DCS's definition.
func TestCDCSRanksBothSecrets(t *testing.T) {
	nan := math.NaN()
	withFeature := func(r *Run, r2 float64) *Run {
		r.Summary.Raw["feature_leak_selected"] = map[string]any{"inverse_linear/r2_mean": r2, "inverse_linear/r2_own_mean": 0.0}
		return r
	}
	runs := []*Run{
		withFeature(sumRun("none", "", nan, 0.80, 0.40, nan, 10, nan), 0.5),
		withFeature(sumRun("labelonly", "x=1", 1, 0.78, 0.02, nan, 10, nan), 0.5),
		withFeature(sumRun("both", "y=1", 1, 0.77, 0.10, nan, 10, nan), 0.05),
	}
	scores, _, _ := dcsScores(groups(runs), "d", []string{"norm/cut"})
	d := func(ap, mp float64) float64 { return 1 / (1 + math.Sqrt(0.5*ap*ap+0.5*(mp-0.8)*(mp-0.8))) }
	want := map[string][3]float64{ // T-DCS labels, T-DCS features, C-DCS
		"none":      {d(0.8, 0.8), d(0.5, 0.8), (d(0.8, 0.8) + d(0.5, 0.8)) / 2},
		"labelonly": {d(0.04, 0.78), d(0.5, 0.78), (d(0.04, 0.78) + d(0.5, 0.78)) / 2},
		"both":      {d(0.2, 0.77), d(0.05, 0.77), (d(0.2, 0.77) + d(0.05, 0.77)) / 2},
	}
	if len(scores) != 3 || scores[0].g.Setting.Method != "both" || scores[1].g.Setting.Method != "labelonly" {
		t.Fatalf("ranking %v, want both, labelonly, none", []string{scores[0].g.Setting.Method, scores[1].g.Setting.Method})
	}
	for _, sc := range scores {
		w := want[sc.g.Setting.Method]
		for i, got := range []float64{sc.tdcs, sc.tdcsFeat, sc.cdcs} {
			if math.Abs(got-w[i]) > 1e-12 {
				t.Errorf("%s: score %d = %v, want %v", sc.g.Setting.Method, i, got, w[i])
			}
		}
	}
	// Without feature figures the ranking is by the label side alone.
	for _, r := range runs {
		delete(r.Summary.Raw, "feature_leak_selected")
	}
	scores, _, _ = dcsScores(groups(runs), "d", []string{"norm/cut"})
	if scores[0].g.Setting.Method != "labelonly" || !math.IsNaN(scores[0].cdcs) {
		t.Errorf("without feature attacks: first %s (C-DCS %v), want labelonly and no C-DCS", scores[0].g.Setting.Method, scores[0].cdcs)
	}
}
