package report

import (
	"strings"
	"testing"
)

// TestFrontierSeedMarks: a setting trained with several seeds gets its
// leak's range as a bar, a rejected one a cross, each named once in the
// legend; a plan without them has neither legend entry.
func TestFrontierSeedMarks(t *testing.T) {
	pts := []FrontierPoint{
		{Method: "none", Leak: 0.4, ValAUC: 0.9},
		{Method: "marvell", Leak: 0.25, ValAUC: 0.85, LeakMin: 0.25, LeakMax: 0.33, Rejected: true},
		{Method: "marvell", Leak: 0.2, ValAUC: 0.8, LeakMin: 0.18, LeakMax: 0.29},
	}
	_, svg, err := FrontierFigure(pts, 0.3, 2, "leak")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"leak over the seeds", "rejected: within the limit on one seed", "recommended (within the limit on every seed)"} {
		if n := strings.Count(string(svg), want); n != 1 {
			t.Errorf("legend %q appears %d times, want once", want, n)
		}
	}
	_, svg, err = FrontierFigure(pts[:1], 0.3, 0, "leak")
	if err != nil {
		t.Fatal(err)
	}
	if s := string(svg); strings.Contains(s, "over the seeds") || strings.Contains(s, "rejected") || !strings.Contains(s, ">recommended<") {
		t.Error("a one-seed plan's figure has the seed marks, or lacks the plain recommendation")
	}
}
