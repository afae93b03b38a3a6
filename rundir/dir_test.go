package rundir

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/splitguard/splitguard/atomicfile/atomicfiletest"
	"github.com/splitguard/splitguard/config"
)

// TestLockRefusesASecondHolderAndTouchesNothing: a second Lock of a held
// directory (another open file description, as another process would
// have) is refused at once with the holder's process ID, and leaves every
// file as it was; once released, the directory can be locked again.
func TestLockRefusesASecondHolderAndTouchesNothing(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	first, err := Lock(dir)
	if err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, LockFile)); err != nil || string(b) != strconv.Itoa(os.Getpid())+"\n" {
		t.Fatalf("lock file %q (%v), want this process's ID", b, err)
	}
	for name, content := range map[string]string{ConfigFile: "seed: 1\n", ".tmp-x.ckpt-123": "half", BatchesFile: "{}\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	before := atomicfiletest.Snapshot(t, dir)
	_, err = Lock(dir)
	var le *LockedError
	if !errors.As(err, &le) || le.PID != os.Getpid() || le.Dir != dir || !strings.Contains(err.Error(), "pid "+strconv.Itoa(os.Getpid())) {
		t.Fatalf("second Lock: %v, want a LockedError naming pid %d", err, os.Getpid())
	}
	if after := atomicfiletest.Snapshot(t, dir); !reflect.DeepEqual(before, after) {
		t.Fatalf("the refused Lock changed the directory:\nbefore %v\nafter  %v", before, after)
	}
	if err := first.Unlock(); err != nil {
		t.Fatal(err)
	}
	again, err := Lock(dir)
	if err != nil {
		t.Fatalf("Lock after Unlock: %v", err)
	}
	if err := again.Unlock(); err != nil {
		t.Fatal(err)
	}
	if err := again.Unlock(); err != nil {
		t.Fatalf("a second Unlock: %v", err)
	}
}

// writeResolved writes config.yaml as a run writes it: resolved for its
// data (the auto settings chosen from 5000 training rows).
func writeResolved(t *testing.T, dir string, c config.Config) {
	t.Helper()
	c.ResolveForData(5000)
	b, err := config.Marshal(&c)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ConfigFile), append([]byte(c.YAMLHeader()), b...), 0o644); err != nil {
		t.Fatal(err)
	}
}

func writeSummary(t *testing.T, dir string, s Summary) {
	t.Helper()
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, SummaryFile), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestCheckReuse(t *testing.T) {
	given := config.Default() // batch, epochs, lr, eval_every, early_stop and select left to the data
	given.SynthRows, given.Protect, given.Attacks = 6000, "none", []string{"norm"}
	given.Resolve()
	other := given
	other.LR = 0.5
	for _, tc := range []struct {
		name    string
		setup   func(t *testing.T, dir string)
		other   bool   // want an ErrOtherRun
		mention string // in the error
	}{
		{"missing directory", func(t *testing.T, dir string) { os.Remove(dir) }, false, ""},
		{"empty directory", func(t *testing.T, dir string) {}, false, ""},
		{"only a lock and a temporary file", func(t *testing.T, dir string) {
			os.WriteFile(filepath.Join(dir, LockFile), []byte("1\n"), 0o644)
			os.WriteFile(filepath.Join(dir, ".tmp-summary.json-1"), nil, 0o644)
		}, false, ""},
		{"unfinished run of the same configuration", func(t *testing.T, dir string) {
			writeResolved(t, dir, given)
			os.WriteFile(filepath.Join(dir, BatchesFile), []byte("{}\n"), 0o644)
		}, false, ""},
		{"the same configuration written as given", func(t *testing.T, dir string) {
			b, _ := config.Marshal(&given)
			os.WriteFile(filepath.Join(dir, ConfigFile), b, 0o644)
			os.WriteFile(filepath.Join(dir, BatchesFile), []byte("{}\n"), 0o644)
		}, false, ""},
		{"a sweep's partial config.yaml of the same configuration", func(t *testing.T, dir string) {
			os.WriteFile(filepath.Join(dir, ConfigFile), []byte("synth_rows: 6000\nprotect: none\nattacks: [norm]\nout: elsewhere\n"), 0o644)
			os.WriteFile(filepath.Join(dir, BatchesFile), []byte("{}\n"), 0o644)
		}, false, ""},
		{"a sweep's partial config.yaml of another configuration", func(t *testing.T, dir string) {
			os.WriteFile(filepath.Join(dir, ConfigFile), []byte("synth_rows: 6000\nprotect: iso\nattacks: [norm]\n"), 0o644)
			os.WriteFile(filepath.Join(dir, BatchesFile), []byte("{}\n"), 0o644)
		}, true, "differs in protect"},
		{"interrupted run of the same configuration", func(t *testing.T, dir string) {
			writeResolved(t, dir, given)
			writeSummary(t, dir, Summary{Truncated: true, TruncatedReason: "stopped by SIGTERM after 40 steps", Signal: "SIGTERM"})
		}, false, ""},
		{"finished run of the same configuration", func(t *testing.T, dir string) {
			writeResolved(t, dir, given)
			writeSummary(t, dir, Summary{Steps: 100})
		}, true, "finished"},
		{"run that max_steps ended", func(t *testing.T, dir string) {
			writeResolved(t, dir, given)
			writeSummary(t, dir, Summary{Truncated: true, TruncatedReason: "max_steps 10 of 100 planned steps"})
		}, true, "finished"},
		{"a failed start of another configuration: config.yaml and empty records", func(t *testing.T, dir string) {
			writeResolved(t, dir, other)
			os.WriteFile(filepath.Join(dir, BatchesFile), nil, 0o644)
			os.WriteFile(filepath.Join(dir, EncodingFile), []byte("enc"), 0o644)
		}, false, ""},
		{"unfinished run of another learning rate", func(t *testing.T, dir string) {
			writeResolved(t, dir, other)
			os.WriteFile(filepath.Join(dir, BatchesFile), []byte("{}\n"), 0o644)
		}, true, "differs in lr"},
		{"checkpoints of another configuration", func(t *testing.T, dir string) {
			writeResolved(t, dir, other)
			os.WriteFile(filepath.Join(dir, "progress.ckpt"), []byte("ck"), 0o644)
		}, true, "differs in lr"},
		{"interrupted run of another configuration", func(t *testing.T, dir string) {
			writeResolved(t, dir, other)
			writeSummary(t, dir, Summary{Truncated: true, TruncatedReason: "the peer went away"})
		}, true, "differs in lr"},
		{"run files without config.yaml", func(t *testing.T, dir string) {
			os.WriteFile(filepath.Join(dir, TopModelFile), []byte("model"), 0o644)
		}, true, "no config.yaml"},
		{"unreadable summary", func(t *testing.T, dir string) {
			writeResolved(t, dir, given)
			os.WriteFile(filepath.Join(dir, SummaryFile), []byte("{"), 0o644)
		}, true, "does not read"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "run")
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			tc.setup(t, dir)
			before := atomicfiletest.Snapshot(t, filepath.Dir(dir))
			err := CheckReuse(dir, func(path string) ([]string, error) { return ConfigDiff(path, given) }, filepath.Join(dir, "progress.ckpt"))
			if got := errors.Is(err, ErrOtherRun); got != tc.other || (err != nil && !tc.other) {
				t.Fatalf("CheckReuse: %v; want another run: %v", err, tc.other)
			}
			if tc.other && !strings.Contains(err.Error(), tc.mention) {
				t.Errorf("error %q does not say %q", err, tc.mention)
			}
			if after := atomicfiletest.Snapshot(t, filepath.Dir(dir)); !reflect.DeepEqual(before, after) {
				t.Error("CheckReuse changed the directory")
			}
		})
	}
}

// TestConfigDiffNamesTheKeys: the keys that differ are named, sorted;
// out and the ignored keys are not compared; a setting chosen from the
// data equals the same setting left to the data, not a given value.
func TestConfigDiffNamesTheKeys(t *testing.T) {
	given := config.Default()
	given.SynthRows = 6000
	dir := t.TempDir()
	old := given
	old.Out = "first"
	writeResolved(t, dir, old)
	path := filepath.Join(dir, ConfigFile)
	resolved := given
	resolved.ResolveForData(5000)
	for _, tc := range []struct {
		name   string
		change func(c *config.Config)
		ignore []string
		want   []string
	}{
		{"same, elsewhere", func(c *config.Config) { c.Out = "second" }, nil, nil},
		{"seed and protection", func(c *config.Config) { c.Seed, c.Protect = 9, "iso" }, nil, []string{"protect", "seed"}},
		{"seed ignored", func(c *config.Config) { c.Seed = 9 }, []string{"seed"}, nil},
		{"the data's batch given", func(c *config.Config) { c.Batch = resolved.Batch }, nil, nil},
		{"another batch given", func(c *config.Config) { c.Batch = resolved.Batch + 1 }, nil, []string{"batch"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cur := given
			tc.change(&cur)
			got, err := ConfigDiff(path, cur, tc.ignore...)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("ConfigDiff: %v, want %v", got, tc.want)
			}
		})
	}
}
