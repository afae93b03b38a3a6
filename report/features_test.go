package report

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFeatureSection: a run whose evaluations carry feature attacks'
// figures gets the section and its figure; a run without has no such
// section.
func TestFeatureSection(t *testing.T) {
	dir := t.TempDir()
	writeFakeRun(t, dir, fakeRun{name: "f", config: "synth_rows: 1000\nprotect: none\nseed: 3\n", leak: 0.7, auc: 0.8, steps: 100, noEval: true})
	var e strings.Builder
	for s := 10; s <= 100; s += 10 {
		fmt.Fprintf(&e, `{"step":%d,"test_auc":0.7,"test_loss":0.5,"ace":0.01,"features":{"inverse_linear/r2_mean":%g,"inverse_linear/r2_own_mean":%g,"inverse_linear/r2/I1":0.5}}`+"\n",
			s, 0.3+float64(s)/1000, -0.01)
	}
	writeFile(t, filepath.Join(dir, "eval.jsonl"), e.String())
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
