// Package atomicfiletest gives tests a small file system to fill up: the
// full-disk cases of the run directory and the checkpoints. It is
// imported by tests only.
package atomicfiletest

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// SmallDisk mounts a tmpfs of size (e.g. "16m") and returns its
// directory, unmounted when the test ends. Mounting needs root: the test
// is skipped otherwise, or when the mount fails.
func SmallDisk(t *testing.T, size string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounting a small file system needs root")
	}
	dir := filepath.Join(t.TempDir(), "disk")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs: %v %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("umount", dir).Run() })
	return dir
}

// Fill writes zeros to path until a write fails (the disk is full); it
// returns an error only when path cannot be created.
func Fill(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	buf := make([]byte, 4096)
	for {
		if _, err := f.Write(buf); err != nil {
			return nil
		}
	}
}
