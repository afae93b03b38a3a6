package atomicfile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestWriteReplacesOrKeeps(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	if err := WriteFile(p, []byte("one"), 0o600); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	err := Write(p, 0o600, func(w io.Writer) error {
		w.Write([]byte("partial"))
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("failed fill: err = %v, want boom", err)
	}
	got, _ := os.ReadFile(p)
	if string(got) != "one" {
		t.Fatalf("after a failed write the file holds %q, want the old %q", got, "one")
	}
	if err := WriteFile(p, []byte("two"), 0o640); err != nil {
		t.Fatal(err)
	}
	got, _ = os.ReadFile(p)
	st, _ := os.Stat(p)
	if string(got) != "two" || st.Mode().Perm() != 0o640 {
		t.Fatalf("file holds %q with mode %v, want %q with 0640", got, st.Mode().Perm(), "two")
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Fatalf("%d entries left in the directory, want only the file", len(entries))
	}
}

func TestCleanTemps(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{".tmp-a-123", "keep", ".hidden"} {
		if err := os.WriteFile(filepath.Join(dir, n), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	removed, err := CleanTemps(dir)
	if err != nil || len(removed) != 1 || filepath.Base(removed[0]) != ".tmp-a-123" {
		t.Fatalf("CleanTemps = %v, %v; want only .tmp-a-123", removed, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "keep")); err != nil {
		t.Fatal("CleanTemps removed a file that is not a temporary one")
	}
	if r, err := CleanTemps(filepath.Join(dir, "missing")); err != nil || r != nil {
		t.Fatalf("CleanTemps on a missing dir = %v, %v", r, err)
	}
}

// TestWriteRefusesNonRegularTargets: a directory and a named pipe are not
// replaced (renaming over them would destroy them; as root even
// /dev/null), and the error names the kind; nothing is left behind.
func TestWriteRefusesNonRegularTargets(t *testing.T) {
	dir := t.TempDir()
	sub := filepath.Join(dir, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	for path, kind := range map[string]string{sub: "a directory", fifo: "a named pipe"} {
		err := WriteFile(path, []byte("x"), 0o644)
		if err == nil || !strings.Contains(err.Error(), kind) {
			t.Errorf("%s: %v, want a refusal naming %q", path, err, kind)
		}
	}
	if fi, err := os.Lstat(fifo); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		t.Errorf("the pipe was replaced: %v %v", fi, err)
	}
	left, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != 2 {
		t.Errorf("files left behind: %v", left)
	}
}
