package report

import (
	"math"
	"strconv"
	"testing"
)

// cheatRun is a run of dataset d, unprotected, whose config is cfg and
// whose summary holds the integrity scores and backdoor outcome given.
func cheatRun(cfg map[string]any, scores map[string]any, backdoor map[string]any, alarm string) *Run {
	raw := map[string]any{"integrity": scores}
	if backdoor != nil {
		raw["backdoor"] = backdoor
	}
	if alarm != "" {
		raw["integrity_alarm"] = alarm
	}
	cfg["data"] = "/x/table.csv"
	return &Run{Config: cfg, Setting: SettingOf(cfg), Summary: &Summary{Raw: raw}}
}

// TestIntegritySection: three honest runs (outlier_peak 1, 2, 3), two
// villain runs (2.5 and 4, attack success 0.6 and 0.8, one stopped at
// step 26) and a dry run (0.1): the villain row's mean attack success
// rate is 0.7 beside the dry run's 0.1, its clean AUC 0.9; its detector
// row has AUC 7/8 against the honest runs and the dry run (an honest
// party, score 0.5): 2.5 beats 0.5, 1 and 2, 4 beats all four — counted
// by hand; 1 of 2 runs above every honest score, the stop at step 26.
func TestIntegritySection(t *testing.T) {
	var runs []*Run
	for _, s := range []float64{1, 2, 3} {
		runs = append(runs, cheatRun(map[string]any{}, map[string]any{"outlier_peak": s}, nil, ""))
	}
	runs = append(runs,
		cheatRun(map[string]any{"backdoor": "villain"}, map[string]any{"outlier_peak": 2.5}, map[string]any{"asr": 0.6, "clean_test_auc": 0.9}, ""),
		cheatRun(map[string]any{"backdoor": "villain"}, map[string]any{"outlier_peak": 4.0}, map[string]any{"asr": 0.8, "clean_test_auc": 0.9},
			"integrity: outlier_peak scored 4 at step 26, reaching the threshold 3.2: the passive party is suspected"),
		cheatRun(map[string]any{"backdoor": "villain", "backdoor_dry_run": true}, map[string]any{"outlier_peak": 0.5}, map[string]any{"asr": 0.1, "clean_test_auc": 0.91}, ""))
	// The first villain run warned twice (outlier_peak and replay), the
	// stopped one by outlier_peak; an honest run warned by replay.
	runs[3].Summary.Raw["integrity_alarms"] = []any{map[string]any{"detector": "outlier_peak"}, map[string]any{"detector": "replay"}}
	runs[4].Summary.Raw["integrity_alarms"] = []any{map[string]any{"detector": "outlier_peak"}}
	runs[0].Summary.Raw["integrity_alarms"] = []any{map[string]any{"detector": "replay"}}
	b := &builder{set: &Set{Runs: runs}}
	sec, err := b.integritySection()
	if err != nil || sec == nil {
		t.Fatalf("section %v, error %v", sec, err)
	}
	find := func(label string) []Cell {
		for _, r := range sec.Table.Rows {
			if r[2].Text == label {
				return r
			}
		}
		t.Fatalf("no row %q in %v", label, sec.Table.Rows)
		return nil
	}
	v := find("villain")
	if v[3].Text != "2" || v[4].Text != "0.700" || v[5].Text != "0.100" || v[6].Text != "0.9000" || v[7].Text != "1" || v[8].Text != "2" {
		t.Errorf("villain row %v", v)
	}
	d := find("  villain ← outlier_peak")
	auc, err := strconv.ParseFloat(d[4].Text, 64)
	if err != nil || math.Abs(auc-7.0/8) > 0.001 {
		t.Errorf("detection AUC %q, want %.3f", d[4].Text, 7.0/8)
	}
	if d[5].Text != "1 of 2" || d[6].Text != "26" || d[7].Text != "1" || d[8].Text != "2" {
		t.Errorf("detector row %v", d)
	}
	if h := find("honest"); h[8].Text != "1" {
		t.Errorf("honest row %v: want 1 alarmed", h)
	}
	// Only honest runs: no section.
	b = &builder{set: &Set{Runs: runs[:3]}}
	if sec, _ := b.integritySection(); sec != nil {
		t.Errorf("a section without cheating runs: %+v", sec)
	}
}

// TestCheatingRunsAreTheirOwnSetting: a cheating run and a backdoor's dry
// run are settings of their own (the privacy figures do not average them
// with the honest runs), while the cheating table compares them with the
// honest runs of the same protection.
func TestCheatingRunsAreTheirOwnSetting(t *testing.T) {
	for _, tc := range []struct {
		cfg        map[string]any
		label, pro string
	}{
		{map[string]any{"protect": "max_norm"}, "max_norm", "max_norm"},
		{map[string]any{"protect": "max_norm", "backdoor": "villain"}, "max_norm villain", "max_norm"},
		{map[string]any{"backdoor": "villain", "backdoor_dry_run": true}, "none villain (dry run)", "none"},
		{map[string]any{"passive_optimizer": "malicious_sgd"}, "none optimizer malicious_sgd", "none"},
	} {
		if got := SettingOf(tc.cfg).Label(); got != tc.label {
			t.Errorf("%v: setting %q, want %q", tc.cfg, got, tc.label)
		}
		if got := protectionLabel(tc.cfg); got != tc.pro {
			t.Errorf("%v: protection %q, want %q", tc.cfg, got, tc.pro)
		}
	}
}
