package netrun

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/splitguard/splitguard/atomicfile/atomicfiletest"
	"github.com/splitguard/splitguard/config"
	"github.com/splitguard/splitguard/rundir"
)

// TestPartyRefusesALockedDirectory: while another process holds a run
// directory (here another lock in this process: flock conflicts between
// open files), a party started on it refuses at once, naming the
// holder's pid, and changes nothing there: in particular it does not
// remove the checkpoint the holder is writing (a passive restarted beside
// a live one used to, and the live run aborted).
func TestPartyRefusesALockedDirectory(t *testing.T) {
	base := smallConfig(synthFile(t, 200), "")
	for _, role := range []string{"active", "passive"} {
		t.Run(role, func(t *testing.T) {
			act, pas := partyConfigs(base, t.TempDir(), "no-certs")
			cfg := map[string]Config{"active": act, "passive": pas}[role]
			cfg.InsecureLoopback, cfg.Addr = true, "127.0.0.1:1"
			held, err := rundir.Lock(cfg.Out)
			if err != nil {
				t.Fatal(err)
			}
			defer held.Unlock()
			ck := cfg.checkpointDir()
			if err := os.MkdirAll(ck, 0o700); err != nil {
				t.Fatal(err)
			}
			for path, content := range map[string]string{
				filepath.Join(cfg.Out, rundir.ConfigFile):                     "seed: 3\n",
				filepath.Join(ck, role+"-000000000010.ckpt"):                  "a checkpoint",
				filepath.Join(ck, ".tmp-"+role+"-000000000015.ckpt-12345"):    "being written",
				filepath.Join(cfg.Out, ".tmp-"+rundir.SummaryFile+"-123"):     "being written",
				filepath.Join(cfg.Out, rundir.BatchesFile):                    "{}\n",
				filepath.Join(cfg.Out, ".tmp-"+rundir.TopModelFile+"-999999"): "",
			} {
				if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			before := atomicfiletest.Snapshot(t, cfg.Out)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			begin := time.Now()
			if role == "active" {
				_, err = RunActive(ctx, cfg, Options{Logger: testLogger(t)})
			} else {
				_, err = RunPassive(ctx, cfg, Options{Logger: testLogger(t)})
			}
			var le *rundir.LockedError
			if !errors.As(err, &le) || !strings.Contains(err.Error(), "pid "+strconv.Itoa(os.Getpid())) {
				t.Fatalf("%s on a held directory: %v", role, err)
			}
			if took := time.Since(begin); took > 5*time.Second {
				t.Errorf("refused after %v, want at once", took)
			}
			if after := atomicfiletest.Snapshot(t, cfg.Out); !reflect.DeepEqual(before, after) {
				t.Fatalf("the refused %s changed the directory:\nbefore %v\nafter  %v", role, before, after)
			}
		})
	}
}

// TestPartyNeverOverwritesARun: after a finished two-party run, the active
// started again on its directory refuses it as finished (it used to
// rewrite config.yaml, then fail with "refusing to go back to step 0"),
// and a passive of another seed refuses its directory, both before
// writing anything; with Force, the active removes the finished run's
// files and its checkpoints.
func TestPartyNeverOverwritesARun(t *testing.T) {
	root := t.TempDir()
	base := smallConfig(synthFile(t, faultRows), filepath.Join(root, "inproc"))
	base.Attacks = []string{"norm"}
	act, pas := partyConfigs(base, root, newTestPKI(t))
	pair(t, act, pas)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	otherSeed := pas
	otherSeed.Seed, otherSeed.Addr = 99, "127.0.0.1:1"
	for _, tc := range []struct {
		name    string
		dir     string
		start   func() error
		mention string
	}{
		{"active, same configuration, finished", act.Out, func() error {
			_, err := RunActive(ctx, act, Options{Logger: testLogger(t)})
			return err
		}, "finished"},
		{"passive, another seed", pas.Out, func() error {
			_, err := RunPassive(ctx, otherSeed, Options{Logger: testLogger(t)})
			return err
		}, "differs in seed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := atomicfiletest.Snapshot(t, tc.dir)
			err := tc.start()
			if !errors.Is(err, rundir.ErrOtherRun) || !strings.Contains(err.Error(), tc.mention) {
				t.Fatalf("error %v, want another run (%s)", err, tc.mention)
			}
			if after := atomicfiletest.Snapshot(t, tc.dir); !reflect.DeepEqual(before, after) {
				t.Fatal("the refused party changed its directory")
			}
		})
	}
	t.Run("active, forced", func(t *testing.T) {
		fctx, fcancel := context.WithCancel(ctx)
		_, err := RunActive(fctx, act, Options{Logger: testLogger(t), Force: true, Ready: func(string) { fcancel() }})
		if errors.Is(err, rundir.ErrOtherRun) {
			t.Fatalf("forced: %v", err)
		}
		for _, gone := range []string{rundir.SummaryFile, rundir.TopModelFile, "checkpoints/active.acked"} {
			if _, err := os.Stat(filepath.Join(act.Out, gone)); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("%s is still there after the forced start (%v)", gone, err)
			}
		}
		if b, err := os.ReadFile(filepath.Join(act.Out, rundir.BatchesFile)); err != nil || len(b) != 0 {
			t.Errorf("batches.jsonl holds %d bytes after the forced start (%v), want none", len(b), err)
		}
		if steps, _ := (&store{dir: act.checkpointDir(), role: "active"}).steps(); len(steps) != 0 {
			t.Errorf("the finished run's checkpoints %v are still there", steps)
		}
	})
}

// TestSignalStopsEitherParty: a signal (the context cancelled with a
// rundir.Stopped cause, as the command does) stops either party at a phase
// of the run: before the first checkpoint (step 3), right after the
// checkpoint of step 10, and between checkpoints (step 13). The party
// returns an error naming the signal and saves its model; the active's
// summary is marked truncated (naming the signal when it was the one
// stopped). Both restarted with the same configuration, the run resumes
// and ends identical to the uninterrupted in-process run. Under -short
// only the stop after the checkpoint of step 10 runs.
func TestSignalStopsEitherParty(t *testing.T) {
	root := t.TempDir()
	base, ref := faultBase(t, root)
	for _, at := range []int64{10, 3, 13} {
		for _, victim := range []string{"active", "passive"} {
			t.Run(fmt.Sprintf("step-%d/%s", at, victim), func(t *testing.T) {
				if testing.Short() && at != 10 {
					t.Skip("one phase under -short")
				}
				signalStopRun(t, base, ref, filepath.Join(root, fmt.Sprint(at), victim), at, victim)
			})
		}
	}
}

// signalStopRun is one case of TestSignalStopsEitherParty: victim stopped
// by SIGTERM after step at (after its checkpoint when at is one).
func signalStopRun(t *testing.T, base config.Config, ref, dir string, at int64, victim string) {
	act, pas := partyConfigs(base, dir, newTestPKI(t))
	act.PeerTimeout, pas.PeerTimeout = 90*time.Second, 90*time.Second
	startActive := func(ctx context.Context) (string, chan activeResult) {
		addr, done := make(chan string, 1), make(chan activeResult, 1)
		go func() {
			s, err := RunActive(ctx, act, Options{Logger: testLogger(t), Ready: func(a string) { addr <- a }})
			done <- activeResult{s, err}
		}()
		select {
		case a := <-addr:
			return a, done
		case res := <-done:
			t.Fatalf("active: %v", res.err)
		}
		return "", nil
	}
	actx, stopActive := context.WithCancelCause(context.Background())
	defer stopActive(nil)
	pctx, stopPassive := context.WithCancelCause(context.Background())
	defer stopPassive(nil)
	sigterm := &rundir.Stopped{Signal: "SIGTERM"}
	stop := func(s int64) error {
		if s == at {
			map[string]context.CancelCauseFunc{"active": stopActive, "passive": stopPassive}[victim](sigterm)
		}
		return nil
	}
	popt := Options{Logger: testLogger(t)}
	if at%int64(pas.CheckpointEvery) == 0 {
		popt.afterPassiveSaved = stop
	} else {
		popt.afterPassiveStep = stop
	}
	var done chan activeResult
	pas.Addr, done = startActive(actx)
	pdone := make(chan error, 1)
	go func() { _, err := RunPassive(pctx, pas, popt); pdone <- err }()
	res := <-done
	sum := readSummary(t, act.Out)
	if !sum.Truncated || sum.Steps < at {
		t.Errorf("the active's summary: truncated %v after %d steps, reason %q", sum.Truncated, sum.Steps, sum.TruncatedReason)
	}
	if victim == "active" {
		if rundir.SignalOf(res.err) != "SIGTERM" || sum.Signal != "SIGTERM" || !strings.Contains(sum.TruncatedReason, "SIGTERM") {
			t.Fatalf("the stopped active: %v; summary signal %q, reason %q", res.err, sum.Signal, sum.TruncatedReason)
		}
		if _, err := os.Stat(filepath.Join(act.Out, rundir.TopModelFile)); err != nil {
			t.Errorf("no model saved: %v", err)
		}
	} else {
		if err := <-pdone; rundir.SignalOf(err) != "SIGTERM" {
			t.Fatalf("the stopped passive: %v", err)
		}
		if _, err := os.Stat(filepath.Join(pas.Out, rundir.BottomModelFile)); err != nil {
			t.Errorf("no model saved: %v", err)
		}
		go func() { _, err := RunPassive(context.Background(), pas, Options{Logger: testLogger(t)}); pdone <- err }()
	}
	// The active restarted on the same address (the passive, still
	// running or restarted, reconnects to it).
	act.Addr = pas.Addr
	_, done = startActive(context.Background())
	if err := <-pdone; err != nil {
		t.Fatalf("passive: %v", err)
	}
	if res := <-done; res.err != nil {
		t.Fatalf("the restarted active: %v", res.err)
	}
	r := &faultRun{t: t, act: act}
	r.sameAsReference(ref)
	if s := readSummary(t, act.Out); s.Truncated || s.Signal != "" {
		t.Errorf("the resumed run's summary: truncated %v, signal %q", s.Truncated, s.Signal)
	}
}

// TestSecondProcessOnALiveRun: while a two-party run is live — before its
// first checkpoint (step 3), right after the checkpoint of step 10, and
// between checkpoints (step 13) — a second active and a second passive
// are started on its run directories (a supervisor that thought the first
// hung). Each is refused at once, naming this process's ID, and the live
// run ends identical to the uninterrupted in-process run (before the lock,
// a second passive removed the live one's temporary checkpoint file and
// the run aborted).
func TestSecondProcessOnALiveRun(t *testing.T) {
	root := t.TempDir()
	base, ref := faultBase(t, root)
	for _, at := range []int64{3, 10, 13} {
		t.Run(fmt.Sprint("step-", at), func(t *testing.T) {
			if testing.Short() && at != 13 {
				t.Skip("one phase under -short")
			}
			r := startFault(t, base, filepath.Join(root, fmt.Sprint(at)))
			refusals := make(chan []error, 1)
			second := func(s int64) error {
				if s != at {
					return nil
				}
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				defer cancel()
				act := r.act
				act.Addr = "127.0.0.1:0"
				_, errA := RunActive(ctx, act, Options{Logger: testLogger(t)})
				_, errP := RunPassive(ctx, r.pas, Options{Logger: testLogger(t)})
				refusals <- []error{errA, errP}
				return nil
			}
			if at%int64(r.pas.CheckpointEvery) == 0 {
				r.saved = second
			} else {
				r.stepped = second
			}
			if _, err := r.passive(context.Background()); err != nil {
				t.Fatalf("the live passive: %v\n%s", err, r.logText())
			}
			if res := r.activeEnd(); res.err != nil {
				t.Fatalf("the live active: %v", res.err)
			}
			for i, err := range <-refusals {
				var locked *rundir.LockedError
				if !errors.As(err, &locked) || locked.PID != os.Getpid() || !strings.Contains(err.Error(), strconv.Itoa(os.Getpid())) {
					t.Errorf("second %s: %v, want a refusal naming pid %d", []string{"active", "passive"}[i], err, os.Getpid())
				}
			}
			r.sameAsReference(ref)
		})
	}
}
