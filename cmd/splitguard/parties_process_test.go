package main

import (
	"bytes"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// partiesTrain are the training flags of the K-party process test: the
// process fixture's, split over two passive parties ("inf" and "noise")
// with an MLP whose active party reads no column.
func partiesTrain(f fixture) []string {
	return append(append([]string(nil), f.train...), "--model", "mlp", "--baseline=false",
		"--parties", "inf=C1,C2,C5,C8,C11", "--parties", "noise=C3,C4,C6,C7,C10")
}

// TestKillPassiveOfThree runs 1 active + 2 passive processes of the
// binary over mutual TLS with checkpoints, kills either passive or the
// active with SIGKILL after the active's checkpoint of step 30, waits for
// the other two to end (a lost party ends every session, each party
// keeping its checkpoints), restarts all three with the same
// command lines, and checks that the run resumed from a checkpoint and
// ended with the evaluations, summary figures and top model of the
// uninterrupted in-process run (`train` with the same flags).
func TestKillPassiveOfThree(t *testing.T) {
	if testing.Short() {
		t.Skip("runs four processes twice")
	}
	f := getFixture(t)
	for _, n := range []string{"inf", "noise"} {
		cmd := exec.Command(binary, "certs", "issue", "--dir", "pki", "--name", n)
		cmd.Dir = f.dir
		if out, err := cmd.CombinedOutput(); err != nil && !strings.Contains(string(out), "exists") {
			t.Fatalf("certs issue %s: %v\n%s", n, err, out)
		}
	}
	train := partiesTrain(f)
	sg(t, f.dir, append([]string{"train", "--out", "k3-inproc"}, train...)...)
	for _, victim := range []string{"inf", "noise", "active"} {
		t.Run(victim, func(t *testing.T) {
			pre := "k3-" + victim + "-"
			addr := freeAddr(t)
			common := []string{"--addr", addr, "--cert-dir", "pki", "--checkpoint-every", "5", "--peer-timeout", "10s"}
			activeCmd := append(append([]string{"active", "--out", pre + "active", "--name", "active"}, common...), train...)
			passiveCmd := func(name string) []string {
				return append(append([]string{"passive", "--out", pre + name, "--name", name, "--peer-name", "active"}, common...), train...)
			}
			a := start(t, f.dir, "active", activeCmd...)
			a.await(func(l string) bool { return strings.Contains(l, "listening on") }, 20*time.Second)
			inf := start(t, f.dir, "inf", passiveCmd("inf")...)
			noise := start(t, f.dir, "noise", passiveCmd("noise")...)
			a.await(func(l string) bool {
				return strings.Contains(l, `msg="checkpoint saved"`) && strings.Contains(l, "step=30")
			}, 90*time.Second)
			procs := map[string]*proc{"active": a, "inf": inf, "noise": noise}
			procs[victim].kill()
			if victim == "active" {
				// The passives wait for the active to come back (as with
				// one passive): restart it alone; a passive that gave up
				// meanwhile is restarted too.
				a = start(t, f.dir, "active", activeCmd...)
				for _, p := range []*proc{inf, noise} {
					if err := p.wait(120 * time.Second); err != nil {
						t.Logf("%s ended (%v) while the active was down; restarting it", p.name, err)
						q := start(t, f.dir, p.name, passiveCmd(p.name)...)
						if err := q.wait(120 * time.Second); err != nil {
							t.Fatalf("%s: %v\n%s", q.name, err, q.logText())
						}
					}
				}
			} else {
				// The others end, each with an error, once its peer timeout
				// passes: every party keeps its checkpoints.
				for name, p := range procs {
					if name == victim {
						continue
					}
					if err := p.wait(60 * time.Second); err == nil {
						t.Fatalf("%s ended without an error after %s was killed:\n%s", name, victim, p.logText())
					}
				}
				a = start(t, f.dir, "active", activeCmd...)
				a.await(func(l string) bool { return strings.Contains(l, "listening on") }, 20*time.Second)
				inf = start(t, f.dir, "inf", passiveCmd("inf")...)
				noise = start(t, f.dir, "noise", passiveCmd("noise")...)
				for _, p := range []*proc{inf, noise} {
					if err := p.wait(120 * time.Second); err != nil {
						t.Fatalf("%s: %v\n%s", p.name, err, p.logText())
					}
				}
			}
			if err := a.wait(60 * time.Second); err != nil {
				t.Fatalf("active: %v\n%s", err, a.logText())
			}
			var resumed string
			for _, l := range strings.Split(a.logText(), "\n") {
				if strings.Contains(l, "msg=resuming") {
					resumed = l
				}
			}
			if resumed == "" || strings.Contains(resumed, "step=0") {
				t.Fatalf("the restarted run did not resume from a checkpoint: %q\n%s", resumed, a.logText())
			}
			t.Logf("restarted: %s", resumed)
			act, ref := filepath.Join(f.dir, pre+"active"), filepath.Join(f.dir, "k3-inproc")
			if g, w := readFile(t, filepath.Join(act, "eval.jsonl")), readFile(t, filepath.Join(ref, "eval.jsonl")); !bytes.Equal(g, w) {
				t.Errorf("eval.jsonl differs from the in-process run's:\n%s\nvs\n%s", g, w)
			}
			got, want := readJSON(t, filepath.Join(act, "summary.json")), readJSON(t, filepath.Join(ref, "summary.json"))
			for _, k := range []string{"test_auc_final", "test_loss_final", "train_loss_final", "steps"} {
				if g, w := got[k], want[k]; w == nil || fmt.Sprint(g) != fmt.Sprint(w) {
					t.Errorf("summary %s: %v after the kill, %v in process", k, g, w)
				}
			}
		})
	}
}
