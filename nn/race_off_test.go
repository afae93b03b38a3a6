//go:build !race

package nn

// raceEnabled is true when the tests run under the race detector, whose
// instrumentation allocates: allocation counts mean nothing there.
const raceEnabled = false
