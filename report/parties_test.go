package report

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/splitguard/splitguard/rundir"
	"github.com/splitguard/splitguard/rundir/rundirtest"
)

// TestPartiesSection checks that a run with several passive parties,
// recorded by rundir, gets the per-party table: one row per party or
// subset and cut-layer attack, in the audit's order, with the mean leak
// AUC summary.json holds, the gain at the selected evaluation (the
// fixture's validation AUC less its AUC without the party: 0.2 for the
// first, 0.1 for the second) and the model attacks' AUC at the last
// evaluation (0.5 + 40/100); and that other runs get none.
func TestPartiesSection(t *testing.T) {
	dir := t.TempDir()
	rundirtest.Write(t, dir, rundirtest.Spec{Config: "protect: none\nattacks: [norm]\ncontribution: true\n", Steps: 40, Leak: 0.8, AUC: 0.8,
		Parties: []string{"inf", "noise"},
		PartyAttacks: func(done int) map[string]map[string]float64 {
			return map[string]map[string]float64{"inf": {"completion/auc": 0.5 + float64(done)/100, "completion/accuracy": 0.7}}
		}})
	var sum struct {
		Parties map[string]struct {
			Leak map[string]struct {
				Mean float64 `json:"mean"`
			} `json:"leak"`
		} `json:"parties"`
	}
	raw, err := os.ReadFile(filepath.Join(dir, rundir.SummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &sum); err != nil {
		t.Fatal(err)
	}
	mean := func(name string) string { return fmt.Sprintf("%.4f", sum.Parties[name].Leak["norm/cut"].Mean) }
	want := [][4]string{{"inf", mean("inf"), "0.2000", "completion 0.9000"}, {"noise", mean("noise"), "0.1000", "—"}, {"inf+noise", mean("inf+noise"), "—", "—"}}

	sec := partiesSection(t, dir)
	if sec == nil || sec.Table == nil {
		t.Fatal("no per-party section")
	}
	if len(sec.Table.Rows) != len(want) {
		t.Fatalf("%d rows, want %d (the cut layer only): %v", len(sec.Table.Rows), len(want), sec.Table.Rows)
	}
	for i, w := range want {
		r := sec.Table.Rows[i]
		if r[1].Text != w[0] {
			t.Errorf("row %d: %v, want party %s", i, r, w[0])
		}
		if r[4].Text != w[1] || r[6].Text != w[2] || r[7].Text != w[3] {
			t.Errorf("row %d: mean %s gain %s model attacks %s, want %v", i, r[4].Text, r[6].Text, r[7].Text, w)
		}
	}

	plain := t.TempDir()
	writeFakeRun(t, plain, fakeRun{name: "p", config: "protect: none\n", leak: 0.7, auc: 0.8, steps: 20})
	if sec := partiesSection(t, plain); sec != nil {
		t.Errorf("a run with one passive party got the per-party section: %v", sec.Table.Rows)
	}
}

// partiesSection returns the per-party section of the report on dir (nil
// when there is none).
func partiesSection(t *testing.T, dir string) *Section {
	t.Helper()
	set, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	page, err := Build(set)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range page.Sections {
		if s != nil && s.ID == "parties" {
			return s
		}
	}
	return nil
}
