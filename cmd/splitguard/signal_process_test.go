package main

import (
	"errors"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// exitCode is the exit status of a process that ended with err.
func exitCode(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err == nil {
		return 0
	}
	return -1
}

// stop sends sig to the process and waits for it to exit.
func (p *proc) stop(sig syscall.Signal) error {
	p.t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		p.t.Fatal(err)
	}
	return p.wait(30 * time.Second)
}

// TestTrainSignalLockAndForce: a second `train` on the run directory of a
// live one refuses at once, naming its pid, and the first goes on; SIGTERM
// then stops the first with exit status 143, a log line naming the signal
// and a summary.json marked truncated naming it; the same command again
// runs the interrupted run to its end; then another configuration is
// refused (the run is finished) with the --force advice, and replaces the
// run with --force.
func TestTrainSignalLockAndForce(t *testing.T) {
	f := getFixture(t)
	args := append(append([]string{"train", "--out", "sig-train"}, f.train...), "--epochs", "100", "--early-stop", "0", "--attacks", "norm")
	first := start(t, f.dir, "train", args...)
	first.await(func(l string) bool { return strings.Contains(l, "eval: step 200 ") }, 60*time.Second)

	second := start(t, f.dir, "second train", args...)
	err := second.wait(20 * time.Second)
	pid := strconv.Itoa(first.cmd.Process.Pid)
	if exitCode(err) != 1 || !strings.Contains(second.logText(), "in use by another process (pid "+pid+")") {
		t.Fatalf("the second train: %v, want exit status 1 and the holder's pid %s:\n%s", err, pid, second.logText())
	}
	if first.cmd.ProcessState != nil {
		t.Fatal("the first train ended")
	}

	err = first.stop(syscall.SIGTERM)
	log := first.logText()
	if exitCode(err) != exitSIGTERM || !strings.Contains(log, "received SIGTERM") {
		t.Fatalf("train after SIGTERM: %v (exit status %d, want %d):\n%s", err, exitCode(err), exitSIGTERM, log)
	}
	sum := readJSON(t, filepath.Join(f.dir, "sig-train", "summary.json"))
	if sum["truncated"] != true || sum["signal"] != "SIGTERM" || !strings.Contains(sum["truncated_reason"].(string), "SIGTERM") {
		t.Fatalf("summary after SIGTERM: truncated %v, signal %v, reason %v", sum["truncated"], sum["signal"], sum["truncated_reason"])
	}

	sg(t, f.dir, args...)
	if sum := readJSON(t, filepath.Join(f.dir, "sig-train", "summary.json")); sum["truncated"] != nil || sum["steps"] != float64(4500) {
		t.Errorf("the run again: truncated %v after %v steps, want all 4500", sum["truncated"], sum["steps"])
	}

	other := append(append([]string{}, args...), "--seed", "4", "--max-steps", "30")
	p := start(t, f.dir, "other train", other...)
	if err := p.wait(20 * time.Second); exitCode(err) != 1 || !strings.Contains(p.logText(), "sig-train: it holds another run, finished (summary.json); give another --out, or --force to replace it") {
		t.Fatalf("train of another configuration: %v\n%s", err, p.logText())
	}
	sg(t, f.dir, append(other, "--force")...)
	if sum := readJSON(t, filepath.Join(f.dir, "sig-train", "summary.json")); sum["steps"] != float64(30) {
		t.Errorf("the forced run: %v steps, want 30", sum["steps"])
	}
}

// TestSignalAndResume stops either party with SIGTERM after the
// checkpoint of step 30: it exits with status 143 and a log line naming
// the signal; the active's summary.json is marked truncated (naming the
// signal when the active was stopped). The stopped party restarted (both,
// when the passive was stopped: it ends the active's run), the run
// resumes from the checkpoint and ends identical to an uninterrupted run.
func TestSignalAndResume(t *testing.T) {
	f := getFixture(t)
	refA, refP := reference(t)
	for _, victim := range []string{"active", "passive"} {
		t.Run(victim, func(t *testing.T) {
			act, pas := "term-"+victim+"-active", "term-"+victim+"-passive"
			addr := freeAddr(t)
			a := start(t, f.dir, "active", activeArgs(f, act, addr)...)
			a.await(func(l string) bool { return strings.Contains(l, "listening on") }, 20*time.Second)
			p := start(t, f.dir, "passive", passiveArgs(f, pas, addr)...)
			a.await(func(l string) bool {
				return strings.Contains(l, `msg="checkpoint saved"`) && strings.Contains(l, "step=30")
			}, 60*time.Second)
			stopped := map[string]*proc{"active": a, "passive": p}[victim]
			err := stopped.stop(syscall.SIGTERM)
			if exitCode(err) != exitSIGTERM || !strings.Contains(stopped.logText(), "signal=SIGTERM") {
				t.Fatalf("%s after SIGTERM: %v (exit status %d, want %d):\n%s", victim, err, exitCode(err), exitSIGTERM, stopped.logText())
			}
			if victim == "passive" {
				if err := a.wait(30 * time.Second); exitCode(err) != 1 {
					t.Fatalf("the active after the passive stopped: %v\n%s", err, a.logText())
				}
			}
			sum := readJSON(t, filepath.Join(f.dir, act, "summary.json"))
			wantSignal := map[string]any{"active": "SIGTERM", "passive": nil}[victim]
			if sum["truncated"] != true || sum["signal"] != wantSignal {
				t.Fatalf("the active's summary: truncated %v, signal %v (want %v), reason %v", sum["truncated"], sum["signal"], wantSignal, sum["truncated_reason"])
			}
			a = start(t, f.dir, "active", activeArgs(f, act, addr)...)
			if victim == "passive" {
				a.await(func(l string) bool { return strings.Contains(l, "listening on") }, 20*time.Second)
				p = start(t, f.dir, "passive", passiveArgs(f, pas, addr)...)
			}
			if err := p.wait(90 * time.Second); err != nil {
				t.Fatalf("passive: %v\n%s", err, p.logText())
			}
			if err := a.wait(30 * time.Second); err != nil {
				t.Fatalf("active: %v\n%s", err, a.logText())
			}
			if sum := readJSON(t, filepath.Join(f.dir, act, "summary.json")); sum["truncated"] != nil || sum["signal"] != nil {
				t.Errorf("the resumed run's summary: truncated %v, signal %v", sum["truncated"], sum["signal"])
			}
			sameAsUninterrupted(t, f, a, victim+" stopped by SIGTERM", act, pas, refA, refP)
		})
	}
}
