package report

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/splitguard/splitguard/internal/golden"
)

// TestHTMLGolden compares the report of a small deterministic run (two
// seeds of two settings, recorded by rundir from synthetic steps) with
// testdata/report.html.golden, after normalising what varies between
// machines and runs: the figures' pixels (their own tests check them),
// the run directory's path and the time. The runs audit norm and cosine,
// whose AUCs are exact ranks (no iterative solver whose last bits could
// differ between engines). Rewrite it with
// go test ./report -run TestHTMLGolden -update.
func TestHTMLGolden(t *testing.T) {
	dir := t.TempDir()
	base := "synth_rows: 2000\nattacks: [norm, cosine]\n"
	for _, r := range []fakeRun{
		{name: "none-s1", config: base + "protect: none\nseed: 1\n", leak: 0.9, auc: 0.78},
		{name: "none-s2", config: base + "protect: none\nseed: 2\n", leak: 0.9, auc: 0.775},
		{name: "marvell-s1", config: base + "protect: marvell\nmarvell_s: 4\nseed: 1\n", leak: 0.6, auc: 0.76, marvell: true},
		{name: "marvell-s2", config: base + "protect: marvell\nmarvell_s: 4\nseed: 2\n", leak: 0.6, auc: 0.765, marvell: true},
	} {
		r.steps = 40
		writeFakeRun(t, filepath.Join(dir, r.name), r)
	}
	index, err := Write(dir)
	if err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(index)
	if err != nil {
		t.Fatal(err)
	}
	golden.Check(t, filepath.Join("testdata", "report.html.golden"), normalisePage(string(page), dir))
}

var (
	dataURIs = regexp.MustCompile(`data:image/png;base64,(?:[A-Za-z0-9+/=]|&#43;|&#61;)+`)
	svgBody  = regexp.MustCompile(`(?s)<svg.*?</svg>`)
	stamp    = regexp.MustCompile(`\d{4}-\d{2}-\d{2} \d{2}:\d{2}`)
)

// normalisePage replaces what varies between machines and runs in a
// report page: embedded figures, the run directory's path, the time it
// was generated.
func normalisePage(page, dir string) []byte {
	page = dataURIs.ReplaceAllString(page, "data:image/png;base64,FIGURE")
	page = svgBody.ReplaceAllString(page, "<svg>FIGURE</svg>")
	page = strings.ReplaceAll(page, dir, "RUNDIR")
	page = stamp.ReplaceAllString(page, "DATE TIME")
	return []byte(page)
}
