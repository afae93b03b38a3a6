//go:build unix

package sweep

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// lockState takes the sweep directory's lock (flock(2) on .sweep/lock;
// on NFS, Linux maps it to a POSIX byte-range lock that the server keeps)
// and returns its release.
func lockState(out string) (func(), error) {
	path := stateDir(out, "lock")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("sweep: %w", err)
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("sweep: locking %s: %w", path, err)
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}

// processAlive reports whether a process with this pid exists here.
func processAlive(pid int) bool {
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	err = p.Signal(syscall.Signal(0))
	return err == nil || errors.Is(err, syscall.EPERM)
}
