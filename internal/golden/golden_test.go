package golden

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDiff(t *testing.T) {
	for _, c := range []struct {
		want, got string
		line      string // "" when equal; else the "line N" the difference must name
	}{
		{"a\nb\n", "a\nb\n", ""},
		{"", "", ""},
		{"a\nb\n", "a\nc\n", "line 2:"},
		{"a\nb\n", "a\nb", "line 2:"},      // the last newline lost
		{"a\nb\n", "a\nb\nc\n", "line 3:"}, // a line added
		{"a\nb\nc\n", "a\nb\n", "line 3:"}, // a line lost
		{"x\n", "y\n", "line 1:"},
		{"a b\n", "a  b\n", "line 1:"}, // whitespace counts
	} {
		d := Diff([]byte(c.want), []byte(c.got))
		if c.line == "" {
			if d != "" {
				t.Errorf("Diff(%q, %q) = %q, want none", c.want, c.got, d)
			}
			continue
		}
		if !strings.HasPrefix(d, c.line) {
			t.Errorf("Diff(%q, %q) = %q, want it to start %q", c.want, c.got, d, c.line)
		}
	}
}

// recorder is a testing.TB that records whether it was failed.
type recorder struct {
	testing.TB
	failed bool
	msg    string
}

func (r *recorder) Helper()      {}
func (r *recorder) Name() string { return "TestX" }
func (r *recorder) Errorf(format string, args ...any) {
	r.failed = true
	r.msg = format
}

// TestCheckFailsOnChange makes sure Check fails a test when the output
// differs from the golden file or the file is missing, and passes it when
// they are equal.
func TestCheckFailsOnChange(t *testing.T) {
	if *update {
		t.Skip("-update writes instead of comparing")
	}
	path := filepath.Join(t.TempDir(), "x.golden")
	if err := os.WriteFile(path, []byte("kind: Job\nparallelism: 3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		path, got string
		fail      bool
	}{
		{path, "kind: Job\nparallelism: 3\n", false},
		{path, "kind: Job\nparallelism: 4\n", true},
		{path, "kind: Job\n", true},
		{filepath.Join(t.TempDir(), "missing.golden"), "kind: Job\n", true},
	} {
		r := &recorder{TB: t}
		Check(r, c.path, []byte(c.got))
		if r.failed != c.fail {
			t.Errorf("Check(%q) failed = %v, want %v (%s)", c.got, r.failed, c.fail, r.msg)
		}
	}
}
