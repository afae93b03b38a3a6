package main

import (
	"encoding/json"
	"math"
	"slices"
	"strings"
	"testing"
)

func TestParseCores(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []int
		err  bool
	}{
		{"1,2,4", []int{1, 2, 4}, false},
		{" 16 , 1,16", []int{16, 1}, false},
		{"0", nil, true},
		{"1,x", nil, true},
		{"", nil, true},
		{"5000", nil, true},
	} {
		got, err := parseCores(tc.in)
		if (err != nil) != tc.err || !slices.Equal(got, tc.want) {
			t.Errorf("parseCores(%q) = %v, %v; want %v (error %v)", tc.in, got, err, tc.want, tc.err)
		}
	}
}

// TestScalingRows: medians over the rounds, speed-up against the first
// row's rate per core, efficiency the median of each round's rate over
// the same round's independent processes' summed rate, the processor time
// per step and its ratio to the same round's one-core process's, by hand.
func TestScalingRows(t *testing.T) {
	alone := map[int][]coreResult{
		1: {{100, 10, 10}, {80, 12.5, 12}, {120, 8, 9}},   // median 100/s, 10 ms; CPU 10 ms
		2: {{150, 6.7, 12}, {170, 6, 15}, {160, 6.2, 11}}, // median 160/s, 6.2 ms; CPU 12 ms
		4: {{300, 3.4, 16}, {280, 3.6, 20}, {320, 3.1, 18}},
	}
	together := map[int][]float64{2: {200, 190, 210}, 4: {400, 380, 360}}
	rows := scalingRows([]int{1, 2, 4}, alone, together)
	want := []coreRow{
		{Cores: 1, PerUnit: 10, PerSecond: 100, SpeedUp: 1, Together: 100, Efficiency: 1, CPUPerStep: 10, CPURatio: 1},
		// rounds 150/200, 170/190, 160/210: median 160/210 (not 160/200);
		// CPU 10/12, 12/15, 9/11: median 9/11
		{Cores: 2, PerUnit: 6.2, PerSecond: 160, SpeedUp: 1.6, Together: 200, Efficiency: 160.0 / 210, CPUPerStep: 12, CPURatio: 9.0 / 11},
		// rounds 300/400, 280/380, 320/360: median 300/400; CPU 10/16, 12/20, 9/18: median 0.6
		{Cores: 4, PerUnit: 3.4, PerSecond: 300, SpeedUp: 3, Together: 380, Efficiency: 0.75, CPUPerStep: 18, CPURatio: 0.6},
	}
	for i, w := range want {
		g := rows[i]
		if g.Cores != w.Cores || g.PerUnit != w.PerUnit || g.PerSecond != w.PerSecond || math.Abs(g.SpeedUp-w.SpeedUp) > 1e-12 ||
			g.Together != w.Together || math.Abs(g.Efficiency-w.Efficiency) > 1e-12 ||
			g.CPUPerStep != w.CPUPerStep || math.Abs(g.CPURatio-w.CPURatio) > 1e-12 {
			t.Errorf("row %d: %+v, want %+v", i, g, w)
		}
	}
}

// TestBenchCoresRuns: the scaling table of the step and of the PSI, from
// real children of the built program.
func TestBenchCoresRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the program")
	}
	dir := t.TempDir()
	for _, args := range [][]string{
		{"bench", "--cores", "1,2", "--rounds", "1", "--batch", "32", "--vocab", "100", "--steps", "2", "--warmup", "0", "--json"},
		{"bench", "--psi", "64", "--cores", "1,2", "--rounds", "1", "--json"},
	} {
		out := sg(t, dir, args...)
		var got struct {
			Rows []coreRow `json:"rows"`
		}
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
		}
		if len(got.Rows) != 2 || got.Rows[0].Cores != 1 || got.Rows[1].Cores != 2 || got.Rows[0].Efficiency != 1 {
			t.Fatalf("%s: rows %+v", strings.Join(args, " "), got.Rows)
		}
		for _, r := range got.Rows {
			if !(r.PerSecond > 0 && r.PerUnit > 0 && r.Together > 0 && r.Efficiency > 0) {
				t.Errorf("%s: row %+v has an empty figure", strings.Join(args, " "), r)
			}
		}
	}
}
