package main

import (
	"encoding/json"
	"io"
	"math"
	"strings"
	"testing"
)

// TestWholeRunRows: medians over the rounds, and the ratio the median of
// each round's own run rate over its bench rate, by hand.
func TestWholeRunRows(t *testing.T) {
	rounds := map[int][]wholeRunRound{
		// run rates 1000/10 = 100, 1000/8 = 125, 1000/20 = 50;
		// ratios 100/200 = 0.5, 125/125 = 1, 50/40 = 1.25.
		// Processor time per example: run 0.02 s/1000 = 20 µs, 12 µs,
		// 40 µs; bench 2.56 ms/256 = 10 µs, 6 µs, 30 µs; their ratios
		// 0.5, 0.5, 0.75.
		// Training phases 9, 7 and 12 s: outside 1, 1, 8 s; at bench's
		// rate 1000/200 = 5, 8, 25 s; extra 4, −1, −13 s (medians 1, 8,
		// −1).
		2: {{10, 1000, 256, 200, 0.02, 2.56, 9}, {8, 1000, 256, 125, 0.012, 1.536, 7}, {20, 1000, 256, 40, 0.04, 7.68, 12}},
	}
	got := wholeRunRows([]int{2}, rounds)
	want := wholeRunRow{Cores: 2, Seconds: 10, RunPerSecond: 100, Bench: 125, Ratio: 1, Batch: 256, RunCPU: 20, BenchCPU: 10, CPURatio: 0.5,
		Outside: 1, AtBench: 8, Extra: -1}
	near := func(a, b float64) bool { return math.Abs(a-b) <= 1e-9*max(1, math.Abs(b)) }
	if len(got) != 1 || got[0].Cores != want.Cores || got[0].Seconds != want.Seconds || got[0].RunPerSecond != want.RunPerSecond ||
		got[0].Bench != want.Bench || math.Abs(got[0].Ratio-want.Ratio) > 1e-12 || got[0].Batch != want.Batch ||
		!near(got[0].RunCPU, want.RunCPU) || !near(got[0].BenchCPU, want.BenchCPU) || !near(got[0].CPURatio, want.CPURatio) ||
		!near(got[0].Outside, want.Outside) || !near(got[0].AtBench, want.AtBench) || !near(got[0].Extra, want.Extra) {
		t.Fatalf("rows %+v, want [%+v]", got, want)
	}
	// A round without the training phase's time leaves the split out (0).
	rounds[2][2].Training = 0
	if got := wholeRunRows([]int{2}, rounds); got[0].Outside != 0 || got[0].AtBench != 0 || got[0].Extra != 0 {
		t.Errorf("with a round lacking the training phase: %+v", got[0])
	}
	rounds[2][2].Training = 12
	// A round without processor times leaves the CPU columns out (0).
	rounds[2][1].BenchCPU = 0
	if got := wholeRunRows([]int{2}, rounds); got[0].CPURatio != 0 || got[0].RunCPU != 0 {
		t.Errorf("with a round lacking bench's processor time: %+v", got[0])
	}
}

// TestBenchWholeRunRuns: a real train child and a real bench child of
// the built program, at two core counts.
func TestBenchWholeRunRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the program")
	}
	out := sg(t, t.TempDir(), "bench", "--whole-run", "2000", "--cores", "1,2", "--rounds", "2", "--steps", "2", "--warmup", "0", "--vocab", "100", "--json")
	var got struct {
		Rows []wholeRunRow `json:"rows"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(got.Rows) != 2 || got.Rows[0].Cores != 1 || got.Rows[1].Cores != 2 {
		t.Fatalf("rows %+v", got.Rows)
	}
	for _, r := range got.Rows {
		if !(r.Seconds > 0 && r.RunPerSecond > 0 && r.Bench > 0 && r.Ratio > 0 && r.Batch > 0 && r.Outside > 0 && r.AtBench > 0) {
			t.Errorf("row %+v has an empty figure", r)
		}
		if d := r.Outside + r.AtBench + r.Extra - r.Seconds; math.Abs(d) > 0.5*r.Seconds {
			t.Errorf("row %+v: outside + at bench + extra is %g s from the run's (medians of different rounds may differ, not by this much)", r, d)
		}
		// The ratio is the median of each round's own ratio (checked by
		// hand in TestWholeRunRows), not the ratio of the medians: under a
		// varying load the two differ by any amount, so no bound here.
	}
}

// TestBenchWholeRunRefusesWhatItCannotCompare: a run is compared with the
// step of its own model only, and --whole-run takes no other mode.
func TestBenchWholeRunRefusesWhatItCannotCompare(t *testing.T) {
	for _, args := range [][]string{
		{"bench", "--whole-run", "100", "--model", "cnn"},
		{"bench", "--whole-run", "100", "--psi", "10"},
		{"bench", "--whole-run", "100", "--defences"},
		{"bench", "--whole-run", "-5"},
	} {
		cmd := newRootCmd()
		cmd.SetArgs(args)
		cmd.SetOut(io.Discard)
		cmd.SetErr(io.Discard)
		if err := cmd.Execute(); err == nil || !strings.Contains(err.Error(), "--whole-run") {
			t.Errorf("%v: error %v, want one naming --whole-run", args, err)
		}
	}
}
