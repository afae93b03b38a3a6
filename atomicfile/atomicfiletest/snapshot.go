package atomicfiletest

import (
	"os"
	"path/filepath"
	"testing"
)

// Snapshot returns every file under dir (by path) with its content, so
// that a test can check that something left a directory untouched.
func Snapshot(t testing.TB, dir string) map[string]string {
	t.Helper()
	files := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		files[p] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}
