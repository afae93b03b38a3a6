package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/splitguard/splitguard/completion"
)

func runCLI(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	root := newRootCmd()
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(args)
	err := root.Execute()
	return out.String(), err
}

// TestAttackCompletion trains a small in-process run with model completion
// at every evaluation, then attacks it offline both ways: as an in-process
// run (known labels drawn from the data) and as a passive directory with
// the same known labels given as a file, scored against a truth file.
func TestAttackCompletion(t *testing.T) {
	if testing.Short() {
		t.Skip("trains a model")
	}
	dir := t.TempDir()
	data := filepath.Join(dir, "data.txt")
	if _, err := runCLI(t, "data", "synth", "--rows", "6000", "--out", data); err != nil {
		t.Fatal(err)
	}
	run := filepath.Join(dir, "run")
	if out, err := runCLI(t, "train", "--data", data, "--out", run, "--layers", "16,16,8", "--cut", "2", "--embed-dim", "2",
		"--batch", "128", "--lr", "3e-3", "--epochs", "4", "--eval-every", "40", "--hash-buckets", "1000",
		"--attacks", "norm,completion_supervised", "--known-labels", "20", "--select", "last"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	raw, err := os.ReadFile(filepath.Join(run, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	var sum struct {
		TestAUC float64            `json:"test_auc_final"`
		Final   map[string]float64 `json:"eval_attacks_final"`
	}
	if err := json.Unmarshal(raw, &sum); err != nil {
		t.Fatal(err)
	}
	during := sum.Final["completion_supervised/auc"]
	if during < 0.6 || math.Abs(during-sum.TestAUC) > 0.1 {
		t.Fatalf("completion AUC at the last evaluation %v, model test AUC %v", during, sum.TestAUC)
	}

	out, err := runCLI(t, "attack", "completion", "--run", run, "--known-labels", "20", "--attacks", "completion_supervised")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var line struct {
		AUC, ModelTestAUC float64
		KnownLabels       int `json:"known_labels"`
	}
	if err := json.Unmarshal([]byte(strings.TrimSpace(out)), &line); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	// Offline on the final model, with the run's seed: the same rows and
	// head as the last evaluation.
	if line.AUC != during || line.KnownLabels != 20 {
		t.Errorf("offline %s; the run recorded AUC %v", out, during)
	}

	// With its tuned attacker: the default's line unchanged, then the
	// tuned one's with its choice.
	out, err = runCLI(t, "attack", "completion", "--run", run, "--known-labels", "20", "--attacks", "completion_supervised", "--tuned-budget", "3")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	tunedLines := strings.Split(strings.TrimSpace(out), "\n")
	var dflt, tuned struct {
		Attack, Tuned string
		AUC           *float64
	}
	if len(tunedLines) != 2 || json.Unmarshal([]byte(tunedLines[0]), &dflt) != nil || json.Unmarshal([]byte(tunedLines[1]), &tuned) != nil ||
		dflt.AUC == nil || *dflt.AUC != line.AUC || tuned.Attack != "completion_supervised_tuned" || tuned.AUC == nil || !strings.Contains(tuned.Tuned, "sign=") {
		t.Errorf("with --tuned-budget 3:\n%s", out)
	}

	// The passive-directory form: the same known rows from a file.
	_, split, _, err := completion.LoadRun(run)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := completion.Pick(split.Train.Labels, 20, completion.DefaultUnlabelled, 1)
	if err != nil {
		t.Fatal(err)
	}
	var known, truth strings.Builder
	known.WriteString("id,label\n")
	for k, i := range rows.Known {
		fmt.Fprintf(&known, "%d,%d\n", split.Train.IDs[i], rows.KnownLabels[k])
	}
	for i, id := range split.Test.IDs {
		fmt.Fprintf(&truth, "%d,%d\n", id, split.Test.Labels[i])
	}
	knownFile, truthFile := filepath.Join(dir, "known.csv"), filepath.Join(dir, "truth.csv")
	if err := os.WriteFile(knownFile, []byte(known.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(truthFile, []byte(truth.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	scores := filepath.Join(dir, "scores.csv")
	out, err = runCLI(t, "attack", "completion", "--run", run, "--labels", knownFile, "--truth", truthFile,
		"--attacks", "completion_supervised", "--out", scores)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var fromFile struct{ AUC float64 }
	if err := json.Unmarshal([]byte(strings.TrimSpace(out)), &fromFile); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	// Same known rows and head; only the unlabelled sample (feature
	// scaling) differs.
	if math.Abs(fromFile.AUC-line.AUC) > 0.02 {
		t.Errorf("from the label file: AUC %v, in-process %v", fromFile.AUC, line.AUC)
	}
	csv, err := os.ReadFile(scores)
	if err != nil || !strings.HasPrefix(string(csv), "id,completion_supervised\n") ||
		strings.Count(string(csv), "\n") != len(split.Test.IDs)+1 {
		t.Errorf("scores file: %v, %d lines", err, strings.Count(string(csv), "\n"))
	}

	for _, bad := range [][]string{
		{"attack", "completion", "--run", run, "--known-labels", "20", "--labels", knownFile},
		{"attack", "completion", "--run", run, "--draws", "0"},
		{"attack", "completion", "--run", run, "--tuned-budget", "-1"},
		{"attack", "completion", "--run", run, "--attacks", "norm"},
		{"attack", "completion", "--run", run, "--labels", knownFile},
		{"attack", "completion", "--run", run, "--known-labels", "1"},
	} {
		if _, err := runCLI(t, bad...); err == nil {
			t.Errorf("%v: no error", bad)
		}
	}
}

// TestAttackCompletionParty attacks each passive party of an in-process
// run with two offline (--party), and the two colluding (--party p1,p2:
// their bottoms pooled): on the final models, with the run's seed, each
// gives the figure the run recorded for that party or pair at its last
// evaluation; a run with several parties and no --party, an unknown
// party, a party named twice, or --colluder without --labels is refused
// naming what is wrong.
func TestAttackCompletionParty(t *testing.T) {
	if testing.Short() {
		t.Skip("trains a model")
	}
	run := filepath.Join(t.TempDir(), "run")
	if out, err := runCLI(t, "train", "--synth-rows", "6000", "--synth-parties", "2", "--out", run, "--layers", "16,16,8", "--cut", "2",
		"--batch", "128", "--lr", "3e-3", "--epochs", "2", "--eval-every", "40", "--model", "mlp",
		"--attacks", "norm,completion_supervised", "--known-labels", "20", "--select", "last"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	raw, err := os.ReadFile(filepath.Join(run, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	var sum struct {
		Parties map[string]struct {
			Final map[string]float64 `json:"eval_attacks_final"`
		} `json:"parties"`
	}
	if err := json.Unmarshal(raw, &sum); err != nil {
		t.Fatal(err)
	}
	for _, party := range []string{"p1", "p2", "p1,p2"} {
		during, ok := sum.Parties[strings.ReplaceAll(party, ",", "+")].Final["completion_supervised/auc"]
		if !ok {
			t.Fatalf("no in-run completion figure for %s: %s", party, raw)
		}
		out, err := runCLI(t, "attack", "completion", "--run", run, "--party", party, "--known-labels", "20", "--attacks", "completion_supervised")
		if err != nil {
			t.Fatalf("%s: %v\n%s", party, err, out)
		}
		var line struct{ AUC float64 }
		if err := json.Unmarshal([]byte(strings.TrimSpace(out)), &line); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		if line.AUC != during {
			t.Errorf("%s: offline AUC %v, the run recorded %v", party, line.AUC, during)
		}
	}
	for _, c := range []struct{ args, want []string }{
		{nil, []string{"several passive parties", "p1, p2", "--party"}},
		{[]string{"--party", "p3"}, []string{"no passive party \"p3\"", "p1, p2"}},
		{[]string{"--party", "p1,p3"}, []string{"no passive party \"p3\"", "p1, p2"}},
		{[]string{"--party", "p1,p1"}, []string{"named twice"}},
		{[]string{"--colluder", run}, []string{"--colluder", "--labels", "--party A,B"}},
	} {
		out, err := runCLI(t, append([]string{"attack", "completion", "--run", run}, c.args...)...)
		for _, w := range c.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("attack completion %v: %v (%s), want an error naming %q", c.args, err, out, w)
			}
		}
	}
}
