package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/splitguard/splitguard/protect"
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
	cpuBefore, _ := processTime()
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	cpuAfter, _ := processTime()
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
	// The steps' processor time: positive, and no more than the whole
	// command's (read here, around it) shared over its three steps.
	if cpu, ok := got["cpu_ms_per_step"].(float64); !ok || cpu <= 0 || cpu > float64(cpuAfter-cpuBefore)/1e6/3 {
		t.Errorf("cpu_ms_per_step %v, want in (0, %v]", got["cpu_ms_per_step"], float64(cpuAfter-cpuBefore)/1e6/3)
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

func TestBenchDefences(t *testing.T) {
	for _, asJSON := range []bool{false, true} {
		cmd := newRootCmd()
		var out bytes.Buffer
		cmd.SetOut(&out)
		args := []string{"bench", "--defences", "--batch", "16", "--steps", "2", "--warmup", "0"}
		if asJSON {
			args = append(args, "--json")
		}
		cmd.SetArgs(args)
		if err := cmd.Execute(); err != nil {
			t.Fatal(err)
		}
		if !asJSON {
			for _, s := range protect.Specs() {
				if !strings.Contains(out.String(), " "+s.Name+" ") {
					t.Errorf("no row for %s in\n%s", s.Name, out.String())
				}
			}
			continue
		}
		var got struct {
			Defences []struct {
				Defence string  `json:"defence"`
				Ratio   float64 `json:"ratio_to_none"`
			} `json:"defences"`
		}
		if err := json.NewDecoder(&out).Decode(&got); err != nil {
			t.Fatal(err)
		}
		if len(got.Defences) != len(protect.Specs()) || got.Defences[0].Defence != "none" || got.Defences[0].Ratio != 1 {
			t.Errorf("JSON %+v", got)
		}
	}
}

func TestBenchDefencesModel(t *testing.T) {
	cmd := newRootCmd()
	cmd.SetOut(&bytes.Buffer{})
	cmd.SetArgs([]string{"bench", "--defences", "--model", "cnn"})
	if err := cmd.Execute(); err == nil || !strings.Contains(err.Error(), "--model mlp or wdl") {
		t.Errorf("error %v", err)
	}
}
