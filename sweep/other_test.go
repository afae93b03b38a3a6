package sweep

import (
	"context"
	"errors"
	"os"
	"testing"
)

// TestRunRefusesAnotherSweep: a whole sweep of other runs into a
// directory that holds a sweep is refused before anything is written
// (runs.yaml and results.csv stay as they were) unless Force, which
// replaces the record; the same sweep again resumes.
func TestRunRefusesAnotherSweep(t *testing.T) {
	out := t.TempDir()
	spec, _ := ParseSpec([]byte("grid: [{protect: [none, iso]}]\n"), "t")
	runs, _ := spec.Expand()
	if _, err := Run(context.Background(), runs, out, Options{Command: fakeCommand}); err != nil {
		t.Fatal(err)
	}
	read := func(name string) string {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	manifest, results := read(stateDir(out, "runs.yaml")), read(out+"/results.csv")
	spec2, _ := ParseSpec([]byte("grid: [{protect: [x, y]}]\n"), "t")
	runs2, _ := spec2.Expand()
	for _, tc := range []struct {
		name  string
		runs  []RunSpec
		force bool
		other bool // want ErrOtherSweep
	}{
		{"the same sweep", runs, false, false},
		{"another sweep", runs2, false, true},
		{"another sweep, forced", runs2, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			outs, err := Run(context.Background(), tc.runs, out, Options{Command: fakeCommand, Force: tc.force})
			if errors.Is(err, ErrOtherSweep) != tc.other || (err != nil && !tc.other) {
				t.Fatalf("Run: %v; want another sweep: %v", err, tc.other)
			}
			switch {
			case tc.other:
				if read(stateDir(out, "runs.yaml")) != manifest || read(out+"/results.csv") != results {
					t.Error("the refused sweep changed runs.yaml or results.csv")
				}
			case tc.force:
				if read(stateDir(out, "runs.yaml")) == manifest {
					t.Error("the forced sweep did not replace runs.yaml")
				}
			default:
				for _, o := range outs {
					if o.Status != StatusDone || !o.Resumed {
						t.Errorf("the same sweep again: %+v, want done before", o)
					}
				}
			}
		})
	}
}
