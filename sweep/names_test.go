package sweep

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestNamesStayInside: a dataset named ".." (or with a path separator) is
// refused with its line; a grid value that alone makes the run's name
// cannot name "." or ".."; and Run, handed a run named "..", refuses it
// before removing anything (it used to remove the sweep directory's
// parent).
func TestNamesStayInside(t *testing.T) {
	for _, tc := range []struct{ name, text, want string }{
		{"dotdot", "datasets:\n  - name: ..\n    data: x\ngrid: [{protect: none}]\n", `line 2: dataset name: ".." names a directory outside`},
		{"separator", "datasets:\n  - name: a/b\n    data: x\ngrid: [{protect: none}]\n", `"a/b" has the character "/" at byte 1`},
		{"hidden", "datasets:\n  - name: .x\n    data: x\ngrid: [{protect: none}]\n", "starts with a dot"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseSpec([]byte(tc.text), "s.yaml")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
	s, err := ParseSpec([]byte("grid: [{protect: [.., .]}]\n"), "s.yaml")
	if err != nil {
		t.Fatal(err)
	}
	runs, err := s.Expand()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range runs {
		if err := CheckName(r.Name); err != nil {
			t.Errorf("run name %q: %v", r.Name, err)
		}
	}

	root := t.TempDir()
	sentinel := filepath.Join(root, "keep.txt")
	if err := os.WriteFile(sentinel, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(root, "sweep")
	never := func(context.Context, string, string) (*exec.Cmd, error) {
		t.Fatal("a run started")
		return nil, nil
	}
	for _, name := range []string{"..", ".", "a/../..", ""} {
		_, err := Run(context.Background(), []RunSpec{{Name: name, Config: map[string]any{}}}, out, Options{Command: never})
		if err == nil || !strings.Contains(err.Error(), "run name") {
			t.Errorf("run %q: %v, want a refusal", name, err)
		}
		if _, err := os.Stat(sentinel); err != nil {
			t.Fatalf("run %q removed a file outside the sweep directory: %v", name, err)
		}
	}
}

// TestGridBound: a 179-byte grid of 12 keys with 3 values each (531,441
// runs) is refused before it is listed; one just under MaxRuns is listed.
func TestGridBound(t *testing.T) {
	var b strings.Builder
	b.WriteString("grid:\n  - {")
	for i := range 12 {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("k" + string(rune('a'+i)) + ": [1, 2, 3]")
	}
	b.WriteString("}\n")
	s, err := ParseSpec([]byte(b.String()), "big.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Expand(); err == nil || !strings.Contains(err.Error(), "grid entry 1 (line 2) makes the sweep more than 100000 runs") {
		t.Fatalf("531441 runs: %v", err)
	}
	// 3^8 = 6561 runs fit; × 16 seeds = 104976 > MaxRuns.
	small := strings.Replace(b.String(), ", ki: [1, 2, 3], kj: [1, 2, 3], kk: [1, 2, 3], kl: [1, 2, 3]", "", 1)
	s, err = ParseSpec([]byte(small), "ok.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if runs, err := s.Expand(); err != nil || len(runs) != 6561 {
		t.Fatalf("6561 runs: %d, %v", len(runs), err)
	}
	s, err = ParseSpec([]byte("seeds: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16]\n"+small), "seeds.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Expand(); err == nil {
		t.Fatal("104976 runs were listed")
	}
}

// TestTruncatedRunIsRunAgain: a run whose summary says a full disk
// stopped it is run again when the sweep resumes; one truncated by
// max_steps is done.
func TestTruncatedRunIsRunAgain(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		summary string
		done    bool
	}{
		{`{"steps": 10}`, true},
		{`{"steps": 10, "truncated": true, "truncated_reason": "max_steps 10 of 50 planned steps"}`, true},
		{`{"steps": 10, "truncated": true, "truncated_reason": "the disk filled up after 10 steps: no space left on device"}`, false},
		{`{"steps": 1`, false},
	} {
		p := filepath.Join(dir, "summary.json")
		if err := os.WriteFile(p, []byte(tc.summary), 0o644); err != nil {
			t.Fatal(err)
		}
		if got := complete(p); got != tc.done {
			t.Errorf("%s: complete %v, want %v", tc.summary, got, tc.done)
		}
	}
}
