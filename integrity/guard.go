package integrity

import (
	"fmt"

	"github.com/splitguard/splitguard/tensor"
)

// Guard is the active party's watch over the passive party during a
// run: every training batch's embedding through each detector, and the
// passive party's gain at every evaluation against a minimum. Its errors
// are *Alarm; the caller ends the run cleanly on one.
type Guard struct {
	dets    []Detector
	stop    map[string]float64
	minGain float64
	scores  map[string]float64
	parties []string // the passive parties' names (SetParties)
	// partyKeys: each cross-party detector's score keys, DETECTOR/PARTY
	partyKeys map[string][]string
}

// NewGuard returns a guard running the named detectors, which alarms
// when a detector's score reaches its threshold in stop (a detector
// without one never alarms) or when the passive party's gain falls below
// minGain (0: never).
func NewGuard(detectors []string, stop map[string]float64, minGain float64) (*Guard, error) {
	g := &Guard{stop: stop, minGain: minGain, scores: map[string]float64{}}
	for _, name := range detectors {
		d, err := NewDetector(name)
		if err != nil {
			return nil, err
		}
		g.dets = append(g.dets, d)
	}
	return g, nil
}

// Batch scores one training batch's embedding e at step: each
// detector's score (nil without detectors; valid until the next call)
// and the alarm of the first detector reaching its threshold.
func (g *Guard) Batch(step int64, e *tensor.Matrix) (map[string]float64, error) {
	if g == nil || len(g.dets) == 0 {
		return nil, nil
	}
	clear(g.scores)
	for _, d := range g.dets {
		cp, cross := d.(CrossPartyDetector)
		if cross && g.parties == nil {
			return nil, fmt.Errorf("integrity: detector %s needs several passive parties' blocks, and the run has one passive party", d.Name())
		}
		g.scores[d.Name()] = d.Observe(step, e)
		if cross {
			g.partyScores(cp)
		}
	}
	for _, d := range g.dets {
		if t, ok := g.stop[d.Name()]; ok && g.scores[d.Name()] >= t {
			a := &Alarm{Detector: d.Name(), Step: step, Score: g.scores[d.Name()], Threshold: t}
			if cp, ok := d.(CrossPartyDetector); ok {
				a.Verdict = "passive party " + g.suspect(cp) + " is suspected of cheating (a backdoor or free-riding): its embedding disagrees with what the other parties' embeddings predict"
			}
			return g.scores, a
		}
	}
	return g.scores, nil
}

// Eval checks the passive party's gain at the evaluation after step
// steps (nil: not measured).
func (g *Guard) Eval(step int64, gain *float64) error {
	if g != nil && g.minGain > 0 && gain != nil && *gain < g.minGain {
		return &Alarm{Detector: "contribution", Step: step, Score: *gain, Threshold: g.minGain, Below: true}
	}
	return nil
}
