package report

import (
	"math"
	"sort"
	"strings"
)

// featureLeak returns the run's feature attacks' figures of the model it
// keeps (summary.json's feature_leak_selected, else feature_leak_final),
// or nil.
func featureLeak(s *Summary) map[string]any {
	for _, k := range []string{"feature_leak_selected", "feature_leak_final"} {
		if m, ok := s.Raw[k].(map[string]any); ok && len(m) > 0 {
			return m
		}
	}
	return nil
}

// summaryFeatureAttacks returns the feature attacks with summary figures in any of the
// runs, sorted.
func summaryFeatureAttacks(runs []*Run) []string {
	seen := map[string]bool{}
	var out []string
	for _, r := range runs {
		if r.Summary == nil {
			continue
		}
		for k := range featureLeak(r.Summary) {
			name, kind, ok := strings.Cut(k, "/")
			if ok && (kind == "r2_mean" || kind == "acc_mean") && !seen[name] {
				seen[name] = true
				out = append(out, name)
			}
		}
	}
	sort.Strings(out)
	return out
}

// featureAP returns the attack performance of the feature attack (0 when
// the embedding tells the attacker nothing beyond its own columns and the
// prior, 1 for a perfect reconstruction), the feature side's AP of the
// DCS: the mean over the passive's column kinds present of
//
//   - numeric: the mean R² of the guesses minus that of the decoder on the
//     active's own columns (or 0, the prior's, if that is below it),
//   - categorical: the mean top-1 accuracy's gain over the better of the
//     majority prior and the own-column decoder, as a share of what was
//     left to gain (1 − that),
//
// each clamped to [0, 1].
func featureAP(attack string) func(*Summary) *float64 {
	return func(s *Summary) *float64 {
		m := featureLeak(s)
		get := func(kind string) (float64, bool) {
			v, ok := m[attack+"/"+kind].(float64)
			return v, ok && !math.IsNaN(v)
		}
		var sum float64
		n := 0
		if r2, ok := get("r2_mean"); ok {
			own, _ := get("r2_own_mean")
			sum += clamp01(r2 - math.Max(own, 0))
			n++
		}
		if acc, ok := get("acc_mean"); ok {
			base, _ := get("acc_prior_mean")
			if own, ok := get("acc_own_mean"); ok {
				base = math.Max(base, own)
			}
			if base < 1 {
				sum += clamp01((acc - base) / (1 - base))
				n++
			}
		}
		if n == 0 {
			return nil
		}
		v := sum / float64(n)
		return &v
	}
}

func clamp01(v float64) float64 { return math.Min(math.Max(v, 0), 1) }
