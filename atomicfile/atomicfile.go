// Package atomicfile writes files so that a reader (or a process started
// after a crash) sees either the old file or the whole new one, never a
// part: the content goes to a temporary file beside the target, is synced,
// and is renamed into place. It is the one place in splitguard that does
// this; every package that saves a file uses it.
package atomicfile

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// tempPrefix starts the name of every temporary file this package makes,
// so that [CleanTemps] can find the ones an interrupted write left behind.
const tempPrefix = ".tmp-"

// WriteFile atomically replaces path with data, with permissions perm.
func WriteFile(path string, data []byte, perm os.FileMode) error {
	return Write(path, perm, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// Write atomically replaces path with what fill writes, streamed through
// a buffer to a temporary file beside path (nothing is held in memory but
// the buffer), with permissions perm. When fill or any step fails, path is
// untouched and the temporary file is removed. A path that exists and is
// not a regular file (a directory, a device such as /dev/null, a pipe) is
// refused before anything is written.
func Write(path string, perm os.FileMode, fill func(w io.Writer) error) error {
	// Renaming over a device or a pipe would replace it (as root, even
	// /dev/null) with a regular file.
	if fi, err := os.Stat(path); err == nil && !fi.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file (%s): it is not replaced", path, fileKind(fi.Mode()))
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), tempPrefix+filepath.Base(path)+"-*")
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(tmp, 1<<20)
	ferr := fill(bw)
	if ferr == nil {
		ferr = bw.Flush()
	}
	cherr := tmp.Chmod(perm)
	serr := tmp.Sync()
	cerr := tmp.Close()
	if err := errors.Join(ferr, cherr, serr, cerr); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("%s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return nil
}

// IsTemp reports whether a file name is one of this package's temporary
// files.
func IsTemp(name string) bool { return strings.HasPrefix(filepath.Base(name), tempPrefix) }

// CleanTemps removes the temporary files that interrupted writes left in
// dir (not recursively) and returns their names. Call it only where no
// other process writes into dir at the same time.
func CleanTemps(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	var removed []string
	for _, e := range entries {
		if e.Type().IsRegular() && IsTemp(e.Name()) {
			p := filepath.Join(dir, e.Name())
			if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
				return removed, err
			}
			removed = append(removed, p)
		}
	}
	return removed, nil
}

// Reservation is disk space held by a hidden file (a temporary file of
// this package, so [CleanTemps] removes one a crash left), to be given
// back when a full disk leaves no other room for a run's last files.
type Reservation struct {
	path string
}

// Reserve writes n zero bytes to a new temporary file in dir and syncs
// it, so that the space is truly allocated (not a sparse file).
func Reserve(dir string, n int64) (*Reservation, error) {
	f, err := os.CreateTemp(dir, tempPrefix+"reserve-*")
	if err != nil {
		return nil, err
	}
	zeros := make([]byte, 1<<20)
	for left := n; left > 0 && err == nil; left -= int64(len(zeros)) {
		_, err = f.Write(zeros[:min(left, int64(len(zeros)))])
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return nil, fmt.Errorf("reserving %d bytes in %s: %w", n, dir, err)
	}
	return &Reservation{path: f.Name()}, nil
}

// Release gives the space back. It may be called more than once (and on
// a nil Reservation).
func (r *Reservation) Release() error {
	if r == nil || r.path == "" {
		return nil
	}
	err := os.Remove(r.path)
	r.path = ""
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return err
}

// IsDiskFull reports whether err is a write refused for lack of space
// (ENOSPC, EDQUOT, EFBIG).
func IsDiskFull(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) || errors.Is(err, syscall.EFBIG)
}

// fileKind names a non-regular file's kind for an error.
func fileKind(m os.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&os.ModeDevice != 0:
		return "a device"
	case m&os.ModeNamedPipe != 0:
		return "a named pipe"
	case m&os.ModeSocket != 0:
		return "a socket"
	}
	return "not a regular file"
}
