package integrity

// The drift detectors' settings.
const (
	// driftWarmup batches are learnt from before any is scored.
	driftWarmup = 10
	// driftDecay is the weight of a batch in the running statistics after
	// the warm-up.
	driftDecay = 0.1
)

// runningStat is a statistic's running mean and variance over batches:
// an average over the first driftWarmup, then exponential forgetting.
type runningStat struct {
	n        int
	mean, vr float64
}

// add learns x.
func (s *runningStat) add(x float64) {
	w := driftDecay
	if s.n < driftWarmup {
		w = 1 / float64(s.n+1)
	}
	s.n++
	d := x - s.mean
	s.mean += w * d
	s.vr = (1 - w) * (s.vr + w*d*d)
}

// warm reports whether the warm-up is over.
func (s *runningStat) warm() bool { return s.n >= driftWarmup }
