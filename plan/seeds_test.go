package plan

import (
	"math"
	"testing"
)

// TestSumSeedsLeakBound: the seeds' largest judged leak is each seed's
// upper bound where it has one and its q95 where it has none, whichever
// of those is largest — worked by hand for three seeds.
func TestSumSeedsLeakBound(t *testing.T) {
	rows := []Row{
		{StrongestLeak: 0.10, Bound: 0.20},
		{StrongestLeak: 0.30, Bound: math.NaN()}, // no bound: judged by its q95
		{StrongestLeak: 0.12, Bound: 0.25},
	}
	f := sumSeeds(rows)
	if f.Leak != 0.30 || f.LeakLo != 0.10 || f.LeakBound != 0.30 {
		t.Fatalf("leak %g, low %g, bound %g; want 0.30, 0.10, 0.30", f.Leak, f.LeakLo, f.LeakBound)
	}
	rows[1].StrongestLeak = 0.11
	if f := sumSeeds(rows); f.LeakBound != 0.25 || f.Leak != 0.12 {
		t.Fatalf("leak %g, bound %g; want 0.12, 0.25", f.Leak, f.LeakBound)
	}
}
