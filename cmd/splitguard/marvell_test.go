package main

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/splitguard/splitguard/marvell"
)

func TestMarvellSolveStream(t *testing.T) {
	in := strings.Join([]string{
		`{"u":0,"v":0,"d":1,"g":1,"p":0.5,"P":1}`, // closed form: λ₁⁰ = λ₁¹ = 1, sumKL = 1
		`not json`,
		`{"u":1,"v":2,"d":3,"g":1,"p":1.5,"P":1}`,
		``,
		`{"u":1,"v":2,"d":2.5,"g":1,"p":0.5,"P":1}`,
		`{"u":1,"v":2,"g":1,"p":0.5,"P":1}`,
		`{"u":-1,"v":2,"d":3,"g":1,"p":0.5,"P":1}`,
		`{"u":1,"v":2,"d":3,"g":1,"p":0.5,"P":0}`, // P = 0: λ = 0, sumKL before = 1.5
	}, "\n")
	var out, errb bytes.Buffer
	failed, err := marvellSolveStream(strings.NewReader(in), &out, &errb)
	if err != nil {
		t.Fatal(err)
	}
	if failed != 5 {
		t.Errorf("failed = %d, want 5", failed)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 7 {
		t.Fatalf("%d output lines, want 7:\n%s", len(lines), out.String())
	}
	var first map[string]float64
	if err := json.Unmarshal([]byte(lines[0]), &first); err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{"lam10": 1, "lam20": 0, "lam11": 1, "lam21": 0, "sumKL": 1, "error_lower_bound": 0.25, "auc_bound": 0.875}
	if len(first) != len(want) {
		t.Errorf("fields %v, want exactly %v", first, want)
	}
	for k, v := range want {
		if got, ok := first[k]; !ok || got-v > 1e-12 || v-got > 1e-12 {
			t.Errorf("%s = %v, want %v", k, got, v)
		}
	}
	for i, wantLine := range []int{2, 3, 5, 6, 7} {
		var e struct {
			Line  int    `json:"line"`
			Error string `json:"error"`
		}
		if err := json.Unmarshal([]byte(lines[i+1]), &e); err != nil || e.Line != wantLine || e.Error == "" {
			t.Errorf("output %d = %s, want an error for line %d", i+1, lines[i+1], wantLine)
		}
	}
	var last map[string]float64
	_ = json.Unmarshal([]byte(lines[6]), &last)
	if last["sumKL"] != 1.5 || last["lam10"] != 0 {
		t.Errorf("P = 0 line: %v", last)
	}
	if strings.Count(errb.String(), "\n") != 5 || !strings.Contains(errb.String(), "line 6") {
		t.Errorf("stderr:\n%s", errb.String())
	}
}

func TestMarvellExpectCommand(t *testing.T) {
	var out bytes.Buffer
	err := runMarvellExpect(&out, expectOptions{S: []float64{1, 4},
		Design: marvell.Design{Batch: 256, PosRate: 0.5, Dim: 8, Batches: 200, Seed: 1}, JSON: true})
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d lines, want one per s:\n%s", len(lines), out.String())
	}
	prev := 1.0
	for i, l := range lines {
		var rec map[string]float64
		if err := json.Unmarshal([]byte(l), &rec); err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{"s", "batch", "pos_rate", "d", "spread", "batches", "skipped", "lam10", "lam20", "lam11", "lam21",
			"sumKL", "auc_bound", "projection_auc", "mean", "q95", "q95_abs", "chance_q95_abs"} {
			if _, ok := rec[k]; !ok {
				t.Errorf("line %d: no field %q", i+1, k)
			}
		}
		// At p = ½ the λ₁'s equal s (symmetric problem, budget s).
		if s := rec["s"]; math.Abs(rec["lam10"]-s) > 1e-9*s || math.Abs(rec["lam11"]-s) > 1e-9*s {
			t.Errorf("s = %v: λ₁ = %v, %v, want s", s, rec["lam10"], rec["lam11"])
		}
		if rec["projection_auc"] >= prev {
			t.Errorf("projection AUC %v at s = %v not below %v at the smaller s", rec["projection_auc"], rec["s"], prev)
		}
		prev = rec["projection_auc"]
	}
	if err := runMarvellExpect(&out, expectOptions{S: []float64{4},
		Design: marvell.Design{Batch: 1, PosRate: 0.5, Dim: 8, Batches: 10}}); err == nil ||
		!strings.Contains(err.Error(), "batch 1") {
		t.Errorf("batch 1: err %v, want a message naming the batch", err)
	}
}
