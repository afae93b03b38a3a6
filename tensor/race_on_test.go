//go:build race

package tensor

// raceEnabled is true when the tests run under the race detector, whose
// instrumentation allocates: allocation counts mean nothing there.
const raceEnabled = true
