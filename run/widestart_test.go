package run

import (
	"strings"
	"testing"

	"github.com/splitguard/splitguard/config"
	"github.com/splitguard/splitguard/data"
	"github.com/splitguard/splitguard/model"
	"github.com/splitguard/splitguard/protect"
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

// TestStartWideBehindADefence checks that the wide part starts from the
// baseline behind the defences that wrap the top (MID's input layer,
// CAE's label codec, both): the Wide&Deep top inside is found, and the
// start changes its wide weights. Without the unwrapping, train on a small
// table with such a defence failed at its first step under the data-driven
// wide_start.
func TestStartWideBehindADefence(t *testing.T) {
	x := &data.Features{Rows: 2, NumDense: 1, Dense: []float32{0, 1}, DenseNames: []string{"a"}}
	for _, params := range []map[string]float64{{"mid_lambda": 0.1}, {"cae_lambda": 0.1}, {"mid_lambda": 0.1, "cae_lambda": 0.1}} {
		cfg := config.Default()
		cfg.Layers, cfg.Cut, cfg.WideStart = []int{4, 4}, 1, config.WideStartBaseline
		cfg.Params, cfg.LR = protect.Params{}, 0.01
		for k, v := range params {
			cfg.Params[k] = v
		}
		_, top, _, err := cfg.BuildSplitModels(x, x)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := top.(*model.DeepTop); ok {
			t.Fatalf("%v: the top is not wrapped; the test checks nothing", params)
		}
		dt, ok := innerDeepTop(top)
		if !ok || !dt.HasWide() {
			t.Fatalf("%v: no Wide&Deep top found inside %T", params, top)
		}
		// A baseline that failed, with the start chosen from the data: the
		// start gets past the wrapper to the fit and falls back with a warning.
		cfg.Auto = []string{"wide_start"}
		failed := func() *rundir.BaselineSummary { return &rundir.BaselineSummary{Error: "one class"} }
		var warned int
		if err := startWide(&cfg, top, failed, func(string, ...string) { warned++ }); err != nil || warned != 1 {
			t.Errorf("%v: error %v, %d warnings; want none and the fallback's one", params, err, warned)
		}
	}
}
