package step

import "time"

// cpuNow is processCPU's time, 0 where the system does not give it.
func cpuNow() time.Duration {
	d, _ := processCPU()
	return d
}

// cpuProcs is the GOMAXPROCS under which processor times are measured
// (processorTimes); 0, the default, leaves the process's own, the one
// the parties run with, so that internal/par's idle workers spin as
// they do in the run and their spinning counts. The planner's check may
// set another for a comparison (1: the work alone, without the spin).
var cpuProcs = 0

// ProcessCPU returns the processor time this process has used so far (all
// its threads, user and system, getrusage(2)) and true; false where the
// system does not give it.
func ProcessCPU() (time.Duration, bool) { return processCPU() }
