package run

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/splitguard/splitguard/config"
	"github.com/splitguard/splitguard/rundir"
)

// tinyConfig is a run of a few seconds: 2000 synthetic rows, one epoch.
func tinyConfig(t *testing.T) config.Config {
	t.Helper()
	c := config.Default()
	c.SynthRows, c.Batch, c.Epochs, c.LR, c.EvalEvery = 2000, 128, 1, 3e-3, 5
	c.Layers, c.Cut, c.Baseline = []int{8, 8, 8}, 2, false
	c.Out = filepath.Join(t.TempDir(), "run")
	return c
}

func files(t *testing.T, dir string) map[string]string {
	t.Helper()
	m := map[string]string{}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		m[e.Name()] = string(b)
	}
	return m
}

func summaryOf(t *testing.T, dir string) rundir.Summary {
	t.Helper()
	s, err := rundir.ReadSummary(dir)
	if err != nil {
		t.Fatal(err)
	}
	return *s
}

// TestTrainRefusesALockedDirectory: while another holder has the run
// directory's lock, Train refuses at once, naming the holder's pid, and
// changes no file there (not even the temporary files it would clean).
func TestTrainRefusesALockedDirectory(t *testing.T) {
	cfg := tinyConfig(t)
	held, err := rundir.Lock(cfg.Out)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Unlock()
	for name, content := range map[string]string{rundir.ConfigFile: "seed: 1\n", ".tmp-top.model-77": "half written"} {
		if err := os.WriteFile(filepath.Join(cfg.Out, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	before := files(t, cfg.Out)
	_, err = Train(context.Background(), cfg, Options{})
	var le *rundir.LockedError
	if !errors.As(err, &le) || !strings.Contains(err.Error(), "pid "+strconv.Itoa(os.Getpid())) {
		t.Fatalf("Train on a locked directory: %v", err)
	}
	if after := files(t, cfg.Out); !reflect.DeepEqual(before, after) {
		t.Fatalf("the refused run changed the directory:\n%v\n%v", before, after)
	}
}

// TestTrainNeverOverwritesARun: a finished run, or a run of another
// configuration, is refused before anything is written unless Force; an
// interrupted run of the same configuration is run again.
func TestTrainNeverOverwritesARun(t *testing.T) {
	cfg := tinyConfig(t)
	if _, err := Train(context.Background(), cfg, Options{}); err != nil {
		t.Fatal(err)
	}
	finished := files(t, cfg.Out)
	other := cfg
	other.Seed = 7
	for _, tc := range []struct {
		name string
		cfg  config.Config
	}{{"same configuration, finished", cfg}, {"another seed", other}} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Train(context.Background(), tc.cfg, Options{})
			if !errors.Is(err, rundir.ErrOtherRun) {
				t.Fatalf("Train over a finished run: %v", err)
			}
			if now := files(t, cfg.Out); !reflect.DeepEqual(now, finished) {
				t.Fatal("the refused run changed the directory")
			}
		})
	}
	t.Run("another seed, forced", func(t *testing.T) {
		s, err := Train(context.Background(), other, Options{Force: true})
		if err != nil {
			t.Fatal(err)
		}
		if got := summaryOf(t, cfg.Out); got.TestAUCFinal != s.TestAUCFinal || got.Truncated {
			t.Errorf("summary.json %+v is not the forced run's", got)
		}
		if now := files(t, cfg.Out); now[rundir.ConfigFile] == finished[rundir.ConfigFile] {
			t.Error("config.yaml is still the first run's")
		}
	})
}

// TestTrainStoppedBySignal: a context cancelled with a rundir.Stopped
// cause ends the run with an error wrapping it, the models and a summary
// marked truncated naming the signal, also before the first evaluation;
// the same configuration then runs again into the directory and finishes
// as an uninterrupted run does.
func TestTrainStoppedBySignal(t *testing.T) {
	ref := tinyConfig(t)
	want, err := Train(context.Background(), ref, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		stopAt int64 // the step whose record cancels
		evals  bool  // an evaluation came before
	}{{"after evaluations", 8, true}, {"before the first evaluation", 2, false}} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := ref
			cfg.Out = filepath.Join(t.TempDir(), "run")
			ctx, cancel := context.WithCancelCause(context.Background())
			defer cancel(nil)
			_, err := Train(ctx, cfg, Options{OnBatch: func(b rundir.BatchRecord) {
				if b.Step == tc.stopAt {
					cancel(&rundir.Stopped{Signal: "SIGTERM"})
				}
			}})
			if rundir.SignalOf(err) != "SIGTERM" {
				t.Fatalf("Train stopped by SIGTERM: %v", err)
			}
			s := summaryOf(t, cfg.Out)
			if !s.Truncated || s.Signal != "SIGTERM" || !strings.Contains(s.TruncatedReason, "SIGTERM") || s.Steps <= tc.stopAt || s.Steps >= want.Steps {
				t.Errorf("summary: truncated %v, signal %q, reason %q, %d steps (stopped at %d of %d)", s.Truncated, s.Signal, s.TruncatedReason, s.Steps, tc.stopAt, want.Steps)
			}
			noEvalWarning := len(s.Warnings) > 0 && strings.Contains(s.Warnings[len(s.Warnings)-1], "no evaluation")
			if noEvalWarning == tc.evals {
				t.Errorf("warnings %q; an evaluation before the stop: %v", s.Warnings, tc.evals)
			}
			for _, f := range []string{rundir.BottomModelFile, rundir.TopModelFile} {
				if _, err := os.Stat(filepath.Join(cfg.Out, f)); err != nil {
					t.Error(err)
				}
			}
			got, err := Train(context.Background(), cfg, Options{})
			if err != nil {
				t.Fatalf("running the interrupted run again: %v", err)
			}
			if got.TestAUCFinal != want.TestAUCFinal || got.Steps != want.Steps || got.Truncated {
				t.Errorf("the run again: test AUC %v, %d steps, truncated %v; uninterrupted %v, %d", got.TestAUCFinal, got.Steps, got.Truncated, want.TestAUCFinal, want.Steps)
			}
		})
	}
}
