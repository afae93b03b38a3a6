//go:build !unix

package step

import "time"

// processCPU reports that processor time is not measured here: only
// Unix systems give it (getrusage(2)).
func processCPU() (time.Duration, bool) { return 0, false }
