package netrun

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/splitguard/splitguard/config"
)

// TestPrunable: a save keeps the newest keep checkpoints and the two
// newest at or below the acknowledged step, never deletes the one just
// written or a newer one, and deletes the rest.
func TestPrunable(t *testing.T) {
	const none = int64(1<<63 - 1)
	for _, tc := range []struct {
		steps       []int64
		step        int64
		keep        int
		acked       int64
		wantDeleted []int64
	}{
		{[]int64{5, 10, 15}, 15, 2, none, []int64{5}},
		{[]int64{5, 10, 15, 20}, 20, 2, none, []int64{5, 10}},
		{[]int64{5, 10, 15, 20}, 20, 3, none, []int64{5}},
		// The active saved 15 before the passive (acknowledged: 10):
		// 5 and 10 stay, the pair both parties may fall back to.
		{[]int64{5, 10, 15}, 15, 2, 10, nil},
		{[]int64{5, 10, 15, 20}, 20, 2, 15, []int64{5}},
		{[]int64{5, 10, 15, 20}, 20, 2, 10, nil},
		{[]int64{5, 10, 15, 20, 25}, 25, 2, 10, []int64{15}},
		// Nothing at or after the step written is deleted.
		{[]int64{5, 10, 15, 20}, 10, 1, none, []int64{5}},
		{nil, 5, 2, 0, nil},
	} {
		t.Run(fmt.Sprint(tc.steps, tc.step, tc.keep, tc.acked), func(t *testing.T) {
			if got := prunable(tc.steps, tc.step, tc.keep, tc.acked); !slices.Equal(got, tc.wantDeleted) {
				t.Fatalf("deleted %v, want %v", got, tc.wantDeleted)
			}
		})
	}
}

// TestFallbackRule: an active party whose acknowledged step is 10
// (checkpoints every 5) lets a resume go back only when one side's
// checkpoint of 10 is lost, only to the newest step both hold intact, and
// only one checkpoint back.
func TestFallbackRule(t *testing.T) {
	for _, tc := range []struct {
		name    string
		active  []int64 // checkpoints the active holds (all intact unless corrupt)
		corrupt []int64 // of those, the ones that do not verify
		acked   int64
		step    int64
		holds   []int64
		wantErr string // "" for an accepted fallback
		reason  string
	}{
		{"passive lost 10", []int64{5, 10}, nil, 10, 5, []int64{5}, "", "passive party does not hold its checkpoint of step 10"},
		{"passive's 10 corrupt, old peer lists nothing", []int64{5, 10}, nil, 10, 5, nil, "does not hold step 5 intact", ""},
		{"active's 10 corrupt", []int64{5, 10}, []int64{10}, 10, 5, []int64{5, 10}, "", "active party's checkpoint of step 10 does not verify"},
		{"active's 10 missing", []int64{5}, nil, 10, 5, []int64{5, 10}, "", "active party's checkpoint of step 10 does not verify"},
		{"both hold 10 intact", []int64{5, 10}, nil, 10, 5, []int64{5, 10}, "both parties hold step 10 intact", ""},
		{"two checkpoints back", []int64{5, 10, 15}, nil, 15, 5, []int64{5}, "newest checkpoint below it is step 10", ""},
		{"impostor without checkpoints asks for 0", []int64{5, 10, 15}, nil, 10, 0, nil, "newest checkpoint below it is step 5", ""},
		{"the passive lacks the step", []int64{5, 10}, nil, 10, 5, []int64{0}, "does not hold step 5 intact", ""},
		{"the active's step 5 is corrupt too", []int64{5, 10}, []int64{5, 10}, 10, 5, []int64{5}, "does not verify", ""},
		{"first checkpoint lost: back to 0", []int64{5}, nil, 5, 0, nil, "", "passive party does not hold its checkpoint of step 5"},
		{"older checkpoints pruned away", []int64{15}, nil, 15, 0, nil, "holds no checkpoint below step 15", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &activeRun{store: store{dir: t.TempDir(), role: "active"}, acked: tc.acked}
			r.cfg.CheckpointEvery = 5
			r.store.acked = func() int64 { return r.acked }
			for _, s := range tc.active {
				if err := r.store.save(s, bytesSection("active", []byte("state"))); err != nil {
					t.Fatal(err)
				}
			}
			for _, s := range tc.corrupt {
				corruptFile(t, r.store.path(s))
			}
			fb, err := r.fallback(tc.step, tc.holds)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("fallback to %d: %v, %v; want a refusal containing %q", tc.step, fb, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("fallback to %d refused: %v", tc.step, err)
			}
			if fb.From != tc.acked || fb.To != tc.step || !strings.Contains(fb.Reason, tc.reason) {
				t.Fatalf("fallback %+v, want from %d to %d for a reason containing %q", fb, tc.acked, tc.step, tc.reason)
			}
		})
	}
}

// corruptFile flips one byte in the middle of path.
func corruptFile(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0xff
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestLostCheckpointAfterKill is the red team's dead end: the passive is
// killed between checkpoints (at step 13: both parties acknowledged step
// 10, checkpoints every 5) or right after its save of step 10 (then only
// step 5 is acknowledged), and one party's newest checkpoint, of step 10,
// is then corrupt, truncated or gone. The passive's: it restarts against
// the live active. The active's: the active was stopped too and both
// restart. The run resumes at step 5, which both hold intact; after a kill
// at 13 that is a fallback behind the acknowledged step, which the log and
// summary.json record. Every run ends identical to the uninterrupted
// in-process run (the code before this test refused every step below 10
// after a kill at 13 and ended the run truncated).
//
// Under -short (the race detector's run) only the first case of each side
// runs.
func TestLostCheckpointAfterKill(t *testing.T) {
	root := t.TempDir()
	base, ref := faultBase(t, root)
	truncate := func(t *testing.T, p string) {
		if err := os.Truncate(p, 100); err != nil {
			t.Fatal(err)
		}
	}
	remove := func(t *testing.T, p string) {
		if err := os.Remove(p); err != nil {
			t.Fatal(err)
		}
	}
	damages := []struct {
		how string
		do  func(t *testing.T, path string)
	}{{"corrupt", corruptFile}, {"truncated", truncate}, {"missing", remove}}
	for _, kill := range []int64{13, 10} {
		for _, side := range []string{"passive", "active"} {
			for _, dmg := range damages {
				name := fmt.Sprintf("kill-at-%d/%s-%s", kill, side, dmg.how)
				t.Run(name, func(t *testing.T) {
					if testing.Short() && (kill != 13 || dmg.how != "corrupt") {
						t.Skip("one case a side under -short")
					}
					lostCheckpointRun(t, base, ref, filepath.Join(root, name), kill, side, dmg.do)
				})
			}
		}
	}
}

// lostCheckpointRun is one case of TestLostCheckpointAfterKill.
func lostCheckpointRun(t *testing.T, base config.Config, ref, dir string, kill int64, side string, damage func(*testing.T, string)) {
	r := startFault(t, base, dir)
	killed := func(s int64) error {
		if s != kill {
			return nil
		}
		r.px.cut()
		return errKilled
	}
	if kill%5 == 0 {
		r.saved = killed
	} else {
		r.stepped = killed
	}
	if _, err := r.passive(context.Background()); !errors.Is(err, errKilled) {
		t.Fatalf("the killed passive: %v", err)
	}
	r.stepped, r.saved = nil, nil
	if side == "passive" {
		damage(t, filepath.Join(r.pas.checkpointDir(), "passive-000000000010.ckpt"))
		r.px.up()
	} else {
		r.cancel()
		if res := r.activeEnd(); res.err == nil {
			t.Fatal("the stopped active party ended without an error")
		}
		damage(t, filepath.Join(r.act.checkpointDir(), "active-000000000010.ckpt"))
		r = startFault(t, base, dir)
	}
	if _, err := r.passive(context.Background()); err != nil {
		t.Fatalf("the restarted passive: %v\n%s", err, r.logText())
	}
	if res := r.activeEnd(); res.err != nil {
		t.Fatalf("active: %v\n%s", res.err, r.logText())
	}
	got := readSummary(t, r.act.Out).CheckpointFallbacks
	log := r.logText()
	if kill == 13 {
		reason := map[string]string{"passive": "passive party does not hold its checkpoint of step 10",
			"active": "active party's checkpoint of step 10 does not verify"}[side]
		if len(got) != 1 || got[0].From != 10 || got[0].To != 5 || !strings.Contains(got[0].Reason, reason) {
			t.Fatalf("summary's checkpoint fallbacks %+v, want one from 10 to 5 for a reason containing %q", got, reason)
		}
		if !strings.Contains(log, "resuming from an older checkpoint") {
			t.Fatalf("no log line of the fallback:\n%s", log)
		}
	} else if len(got) != 0 {
		t.Fatalf("summary's checkpoint fallbacks %+v, want none: step 5 is the acknowledged one", got)
	}
	if !regexp.MustCompile(`msg=resuming party=passive step=5\b`).MatchString(log) {
		t.Fatalf("the passive did not resume at step 5:\n%s", log)
	}
	r.sameAsReference(ref)
}
