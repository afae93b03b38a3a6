package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func TestMedian(t *testing.T) {
	for _, tc := range []struct {
		in   []float64
		want float64
	}{{[]float64{3}, 3}, {[]float64{5, 1, 3}, 3}, {[]float64{4, 1, 3, 2}, 2.5}} {
		if got := median(tc.in); got != tc.want {
			t.Errorf("median(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

func TestBenchJSON(t *testing.T) {
	cmd := newRootCmd()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetArgs([]string{"bench", "--model", "wdl", "--batch", "32", "--vocab", "50", "--steps", "3", "--warmup", "1", "--json"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	dec := json.NewDecoder(&out)
	if err := dec.Decode(&got); err != nil {
		t.Fatal(err)
	}
	if dec.More() {
		t.Error("more than one JSON value printed")
	}
	ms, _ := got["ms_per_step"].(float64)
	eps, _ := got["examples_per_s"].(float64)
	if ms <= 0 || eps <= 0 || got["batch"].(float64) != 32 {
		t.Errorf("bench printed %v", got)
	}
	if r := eps * ms / 1e3; r < 31.99 || r > 32.01 {
		t.Errorf("examples/s × s/step = %v, want the batch 32", r)
	}
}

func TestBenchUnknownModel(t *testing.T) {
	cmd := newRootCmd()
	cmd.SetOut(&bytes.Buffer{})
	cmd.SetArgs([]string{"bench", "--model", "nope"})
	if err := cmd.Execute(); err == nil || !strings.Contains(err.Error(), `unknown --model "nope"`) {
		t.Errorf("error %v", err)
	}
}
