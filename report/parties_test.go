package report

import (
	"os"
	"path/filepath"
	"testing"
)

// TestPartiesSection checks that a run with several passive parties gets
// the per-party table, one row per party or subset and cut-layer attack,
// its figures as summary.json has them (the model attacks' AUC at the
// last evaluation), and that other runs get none.
func TestPartiesSection(t *testing.T) {
	dir := t.TempDir()
	summary := `{"test_auc_final": 0.8, "steps": 10, "protect": "none", "leak": {"norm/cut": {"q95": 0.9, "mean": 0.7, "batches": 10}},
"parties": {
 "inf": {"members": ["inf"], "leak": {"norm/cut": {"q95": 0.91, "mean": 0.71, "batches": 10}, "norm/first": {"q95": 0.5, "mean": 0.5, "batches": 10}}, "gain_selected": 0.3051, "eval_attacks_final": {"completion/auc": 0.81234, "completion/accuracy": 0.7}},
 "noise": {"members": ["noise"], "leak": {"norm/cut": {"q95": 0.81, "mean": 0.61, "batches": 10}}, "gain_selected": 0.0012},
 "inf+noise": {"members": ["inf", "noise"], "leak": {"norm/cut": {"q95": 0.9, "mean": 0.7, "batches": 10}}}}}`
	for name, body := range map[string]string{"summary.json": summary, "config.yaml": "protect: none\nformat: criteo\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	set, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	page, err := Build(set)
	if err != nil {
		t.Fatal(err)
	}
	var sec *Section
	for _, s := range page.Sections {
		if s != nil && s.ID == "parties" {
			sec = s
		}
	}
	if sec == nil || sec.Table == nil {
		t.Fatal("no per-party section")
	}
	want := [][4]string{{"inf", "0.7100", "0.3051", "completion 0.8123"}, {"noise", "0.6100", "0.0012", "—"}, {"inf+noise", "0.7000", "—", "—"}}
	if len(sec.Table.Rows) != len(want) {
		t.Fatalf("%d rows, want %d (the cut layer only): %v", len(sec.Table.Rows), len(want), sec.Table.Rows)
	}
	for i, w := range want {
		r := sec.Table.Rows[i]
		if r[1].Text != w[0] || r[4].Text != w[1] || r[6].Text != w[2] || r[7].Text != w[3] {
			t.Errorf("row %d: %s mean %s gain %s model attacks %s, want %v", i, r[1].Text, r[4].Text, r[6].Text, r[7].Text, w)
		}
	}
}
