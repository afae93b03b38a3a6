package netrun

import (
	"fmt"
	"time"

	"github.com/splitguard/splitguard/integrity"
	"github.com/splitguard/splitguard/rundir"
)

// alarmed ends the run that an integrity detector's alarm stopped after
// steps (the alarmed batch was never applied; the passive party was sent
// an abort, whose reason stays in this party's log): the top model of the
// selected or last evaluation is saved and summary.json says why.
func (r *activeRun) alarmed(a *integrity.Alarm, steps int64) (*rundir.Summary, error) {
	reason := fmt.Sprintf("%v; ended after %d steps", a, steps)
	r.log.Error("integrity alarm: ending the run", "detector", a.Detector, "step", a.Step, "score", a.Score, "threshold", a.Threshold)
	r.rec.Alarm(reason)
	if err := r.reserve.Release(); err != nil {
		r.log.Warn("could not release the reserved disk space", "err", err)
	}
	if err := r.saveFinal(); err != nil {
		return nil, r.endEarly(fmt.Errorf("active: saving the model: %w", err))
	}
	s, err := r.rec.Finish(steps, time.Since(r.start))
	if err != nil {
		return nil, fmt.Errorf("active: %w", err)
	}
	return s, nil
}
