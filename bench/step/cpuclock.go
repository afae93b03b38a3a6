package step

import "time"

// cpuNow is processCPU's time, 0 where the system does not give it.
func cpuNow() time.Duration {
	d, _ := processCPU()
	return d
}
