package report

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/splitguard/splitguard/rundir/rundirtest"
)

// TestFeatureSection: a run whose evaluations carry feature attacks'
// figures (recorded by rundir) gets the section and its figure; a run
// without has no such section.
func TestFeatureSection(t *testing.T) {
	dir := t.TempDir()
	rundirtest.Write(t, dir, rundirtest.Spec{Config: "synth_rows: 1000\nprotect: none\nseed: 3\nattacks: [norm]\n", Steps: 100, Leak: 0.7, AUC: 0.8,
		Features: func(done int) map[string]float64 {
			return map[string]float64{"inverse_linear/r2_mean": 0.3 + float64(done)/1000, "inverse_linear/r2_own_mean": -0.01, "inverse_linear/r2/I1": 0.5}
		}})
	index, err := Write(dir)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := os.ReadFile(index)
	for _, want := range []string{`id="features"`, "The passive party&#39;s features", "features.png"} {
		if !strings.Contains(string(page), want) && !strings.Contains(string(page), strings.ReplaceAll(want, "&#39;", "'")) {
			t.Errorf("index.html lacks %q", want)
		}
	}
	if st, err := os.Stat(filepath.Join(dir, "report", "features.png")); err != nil || st.Size() < 1000 {
		t.Errorf("features.png: %v", err)
	}

	plain := t.TempDir()
	writeFakeRun(t, plain, fakeRun{name: "p", config: "synth_rows: 1000\nprotect: none\nseed: 3\n", leak: 0.7, auc: 0.8, steps: 100})
	index, err = Write(plain)
	if err != nil {
		t.Fatal(err)
	}
	page, _ = os.ReadFile(index)
	if strings.Contains(string(page), `id="features"`) {
		t.Error("a run without feature figures got the features section")
	}
}
