package step

import "time"

// cpuNow is processCPU's time, 0 where the system does not give it.
func cpuNow() time.Duration {
	d, _ := processCPU()
	return d
}

// cpuProcs is the GOMAXPROCS under which processor times are measured
// (processorTimes): 1, the work without internal/par's spinning. The
// planner's check may set another for a comparison.
var cpuProcs = 1

// ProcessCPU returns the processor time this process has used so far (all
// its threads, user and system, getrusage(2)) and true; false where the
// system does not give it.
func ProcessCPU() (time.Duration, bool) { return processCPU() }
