package run

import (
	"strings"
	"testing"

	"github.com/splitguard/splitguard/config"
	"github.com/splitguard/splitguard/data"
	"github.com/splitguard/splitguard/rundir"
)

// TestStartWideWhenTheBaselineFails checks what a start from the baseline
// does when the baseline could not be fitted: a start the data chose
// (wide_start in auto) falls back to random with a warning naming the
// key, a start the configuration gave is an error naming it.
func TestStartWideWhenTheBaselineFails(t *testing.T) {
	x := &data.Features{Rows: 2, NumDense: 1, Dense: []float32{0, 1}, DenseNames: []string{"a"}}
	failed := func() *rundir.BaselineSummary {
		return &rundir.BaselineSummary{Error: "baseline: the 2 training rows fitted are of one class"}
	}
	for _, auto := range []bool{true, false} {
		cfg := config.Default()
		cfg.Layers, cfg.Cut, cfg.WideStart = []int{4, 4}, 1, config.WideStartBaseline
		if auto {
			cfg.Auto = []string{"wide_start"}
		}
		_, top, _, err := cfg.BuildSplitModels(x, x)
		if err != nil {
			t.Fatal(err)
		}
		var warned []string
		err = startWide(&cfg, top, failed, func(msg string, keys ...string) { warned = append(warned, msg+" "+strings.Join(keys, ",")) })
		switch {
		case auto && (err != nil || len(warned) != 1 || !strings.Contains(warned[0], "one class") || !strings.HasSuffix(warned[0], "wide_start")):
			t.Errorf("chosen from the data: error %v, warnings %q; want none and one warning naming the cause and the key", err, warned)
		case !auto && (err == nil || !strings.Contains(err.Error(), "key wide_start") || len(warned) > 0):
			t.Errorf("given: error %v, warnings %q; want an error naming key wide_start", err, warned)
		}
	}
}
