package atomicfile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
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
