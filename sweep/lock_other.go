//go:build !unix

package sweep

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"
)

// lockState takes the sweep directory's lock: a file created exclusively
// (.sweep/lock.held), waited for up to a minute, then broken as stale.
func lockState(out string) (func(), error) {
	path := stateDir(out, "lock.held")
	deadline := time.Now().Add(time.Minute)
	for {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err == nil {
			f.Close()
			return func() { os.Remove(path) }, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("sweep: locking %s: %w", path, err)
		}
		if time.Now().After(deadline) {
			os.Remove(path)
			deadline = time.Now().Add(time.Minute)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// processAlive cannot tell here: a claim is live until its heartbeat
// stops.
func processAlive(pid int) bool { return true }
