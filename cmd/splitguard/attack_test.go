package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sbinet/npyio"
	"gonum.org/v1/gonum/mat"
)

func writeTestNPY(t *testing.T, path string, v any) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := npyio.Write(f, v); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestAttackMultiClassOnDump writes a dump by hand in run's format (two
// batches whose cut embeddings are three tight clusters of 30, 20 and 10
// rows, one per class of the examples' IDs) and runs the command on it:
// every row is recovered, and majority is 30/60.
func TestAttackMultiClassOnDump(t *testing.T) {
	dir := t.TempDir()
	r := rand.New(rand.NewPCG(1, 2))
	classes := make([]int64, 300)
	for id := range classes {
		classes[id] = int64(id % 7) // overwritten below for the dumped IDs
	}
	var index bytes.Buffer
	for step := range 2 {
		const n, d = 60, 5
		ids := make([]uint64, n)
		labels := make([]uint8, n)
		emb := make([]float64, n*d)
		for i := range n {
			id := uint64(100*step + 3*i + 1)
			cls := int64(2 + min(i/30, 1) + i/50) // classes 2 (30 rows), 3 (20), 4 (10)
			ids[i], classes[id] = id, cls
			labels[i] = uint8(cls % 2)
			for k := range d {
				centre := 0.0
				if k == int(cls)-2 {
					centre = 10
				}
				emb[i*d+k] = centre + 0.1*r.NormFloat64()
			}
		}
		name := func(w string) string { return fmt.Sprintf("step%06d_%s.npy", step, w) }
		writeTestNPY(t, filepath.Join(dir, name("labels")), labels)
		writeTestNPY(t, filepath.Join(dir, name("ids")), ids)
		for _, k := range []string{"cut_grad", "first_grad", "cut_embedding"} {
			writeTestNPY(t, filepath.Join(dir, name(k)), mat.NewDense(n, d, emb))
		}
		line, _ := json.Marshal(map[string]any{"step": step, "epoch": 0, "labels": name("labels"), "ids": name("ids"),
			"cut_grad": name("cut_grad"), "first_grad": name("first_grad"), "cut_embedding": name("cut_embedding")})
		index.Write(append(line, '\n'))
	}
	if err := os.WriteFile(filepath.Join(dir, "index.jsonl"), index.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	classFile := filepath.Join(t.TempDir(), "classes.npy")
	writeTestNPY(t, classFile, classes)

	var out bytes.Buffer
	root := newRootCmd()
	root.SetOut(&out)
	root.SetArgs([]string{"attack", "multiclass", "--dump", dir, "--labels", classFile})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d lines, want 3:\n%s", len(lines), out.String())
	}
	for _, l := range lines[:2] {
		var res struct {
			Rows, Classes      int
			Accuracy, Majority float64
		}
		if err := json.Unmarshal([]byte(l), &res); err != nil {
			t.Fatal(err)
		}
		if res.Rows != 60 || res.Classes != 3 || res.Accuracy != 1 || res.Majority != 0.5 {
			t.Errorf("batch line %s, want 60 rows, 3 classes, accuracy 1, majority 0.5", l)
		}
	}
	if !strings.Contains(lines[2], `"batches":2`) || !strings.Contains(lines[2], `"mean_accuracy":1`) {
		t.Errorf("summary %s", lines[2])
	}

	// A class file too short for the dumped IDs is an error.
	writeTestNPY(t, classFile, classes[:50])
	root = newRootCmd()
	root.SetOut(&out)
	root.SetArgs([]string{"attack", "multiclass", "--dump", dir, "--labels", classFile})
	if err := root.Execute(); err == nil || !strings.Contains(err.Error(), "has no class") {
		t.Errorf("short class file: err %v", err)
	}
}
