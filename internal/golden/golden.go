// Package golden compares a test's text output with a file under
// testdata/ and, with the test flag -update, rewrites the file instead
// (`go test ./deploy -run Golden -update`), the usual Go idiom. Imported by
// tests only.
package golden

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/ with this run's outputs")

// Check compares got with the golden file at path and reports a
// difference, or a missing file, as a test error; with -update it writes
// got to path instead.
func Check(t testing.TB, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s", path)
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Errorf("golden file: %v (write it with go test -run '^%s$' -update)", err, t.Name())
		return
	}
	if d := Diff(want, got); d != "" {
		t.Errorf("the output differs from %s (if the change is intended, rewrite it with go test -run '^%s$' -update):\n%s", path, t.Name(), d)
	}
}

// Diff returns "" when want and got are byte-equal, and otherwise where
// they first differ: the line number and both lines, or which one ends
// first.
func Diff(want, got []byte) string {
	if bytes.Equal(want, got) {
		return ""
	}
	wl, gl := bytes.SplitAfter(want, []byte("\n")), bytes.SplitAfter(got, []byte("\n"))
	for i := 0; ; i++ {
		switch {
		case i >= len(wl) && i >= len(gl):
			// unreachable: equal line lists mean equal bytes
			return "the outputs differ"
		case i >= len(wl):
			return fmt.Sprintf("line %d: the output goes on where the golden file ends: %q", i+1, gl[i])
		case i >= len(gl):
			return fmt.Sprintf("line %d: the output ends where the golden file goes on: %q", i+1, wl[i])
		case !bytes.Equal(wl[i], gl[i]):
			return fmt.Sprintf("line %d:\n  golden: %q\n  output: %q", i+1, wl[i], gl[i])
		}
	}
}
