//go:build unix

package step

import (
	"syscall"
	"time"
)

// processCPU returns the processor time this process has used so far,
// all its threads together, user and system, and true; false where the
// system does not give it. Linux keeps the total to the nanosecond and
// getrusage(2) reports it to the microsecond.
func processCPU() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
