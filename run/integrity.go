package run

import (
	"fmt"

	"github.com/splitguard/splitguard/config"
	"github.com/splitguard/splitguard/integrity"
	"github.com/splitguard/splitguard/party/active"
	"github.com/splitguard/splitguard/rundir"
)

// guard runs the configured integrity detectors on the active party's
// side: every training batch's embedding through each detector, and the
// passive party's gain at every evaluation against key min_passive_gain.
// Its errors are *integrity.Alarm.
type guard struct {
	rec     *rundir.Recorder
	dets    []integrity.Detector
	stop    map[string]float64
	minGain float64
	scores  map[string]float64
}

// newGuard returns cfg's guard (one that does nothing without detectors
// or a minimum gain).
func newGuard(cfg config.Config, rec *rundir.Recorder) (*guard, error) {
	g := &guard{rec: rec, stop: cfg.IntegrityStop, minGain: cfg.MinPassiveGain, scores: map[string]float64{}}
	for _, name := range cfg.Detectors {
		d, err := integrity.NewDetector(name)
		if err != nil {
			return nil, err
		}
		g.dets = append(g.dets, d)
	}
	return g, nil
}

// batch scores one training batch's embedding; an alarm is an error.
func (g *guard) batch(ob *active.Observation) error {
	if len(g.dets) == 0 {
		return nil
	}
	clear(g.scores)
	for _, d := range g.dets {
		g.scores[d.Name()] = d.Observe(ob.Step, ob.Embedding)
	}
	g.rec.ObserveIntegrity(g.scores)
	for _, d := range g.dets {
		if t, ok := g.stop[d.Name()]; ok && g.scores[d.Name()] >= t {
			return &integrity.Alarm{Detector: d.Name(), Step: ob.Step, Score: g.scores[d.Name()], Threshold: t}
		}
	}
	return nil
}

// eval checks an evaluation's passive gain against the minimum.
func (g *guard) eval(e rundir.EvalRecord) error {
	if g.minGain > 0 && e.PassiveGain != nil && *e.PassiveGain < g.minGain {
		return &integrity.Alarm{Detector: "contribution", Step: e.Step, Score: *e.PassiveGain, Threshold: g.minGain, Below: true}
	}
	return nil
}

// alarmReason is the summary's reason for a run an alarm ended.
func alarmReason(a *integrity.Alarm, steps int64) string {
	return fmt.Sprintf("%v; ended after %d steps", a, steps)
}
