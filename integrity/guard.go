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
	// alarm: each detector's alarm threshold (SetAlarms), raised: the
	// alarms of the last batch (Raised)
	alarm  map[string]float64
	raised []*Alarm
}

// NoDetectors is the name that, alone in a list of detectors, turns
// them all off (the default ones included).
const NoDetectors = "none"

// NewGuard returns a guard running the named detectors (NoDetectors is
// skipped), which alarms
// when a detector's score reaches its threshold in stop (a detector
// without one never alarms) or when the passive party's gain falls below
// minGain (0: never).
func NewGuard(detectors []string, stop map[string]float64, minGain float64) (*Guard, error) {
	g := &Guard{stop: stop, minGain: minGain, scores: map[string]float64{}}
	for _, name := range detectors {
		if name == NoDetectors {
			continue
		}
		d, err := NewDetector(name)
		if err != nil {
			return nil, err
		}
		g.dets = append(g.dets, d)
	}
	return g, nil
}

// Batch scores one training batch's embedding e at step, its rows not
// known (BatchRows).
func (g *Guard) Batch(step int64, e *tensor.Matrix) (map[string]float64, error) {
	return g.BatchRows(step, nil, e)
}

// BatchRows scores one training batch's embedding e at step, rows the
// rows of the training split it holds (nil: not known): each detector's
// score (nil without detectors; valid until the next call) and the
// alarm of the first detector reaching its stop threshold. The alarms of
// detectors reaching their alarm thresholds (SetAlarms), which do not
// end the run, are Raised.
func (g *Guard) BatchRows(step int64, rows []int, e *tensor.Matrix) (map[string]float64, error) {
	if g == nil || len(g.dets) == 0 {
		return nil, nil
	}
	clear(g.scores)
	g.raised = g.raised[:0]
	for _, d := range g.dets {
		cp, cross := d.(CrossPartyDetector)
		if cross && g.parties == nil {
			return nil, fmt.Errorf("integrity: detector %s needs several passive parties' blocks, and the run has one passive party", d.Name())
		}
		if rd, ok := d.(RowsDetector); ok && rows != nil {
			g.scores[d.Name()] = rd.ObserveRows(step, rows, e)
		} else {
			g.scores[d.Name()] = d.Observe(step, e)
		}
		if cross {
			g.partyScores(cp)
		}
	}
	for _, d := range g.dets {
		if t, ok := g.alarm[d.Name()]; ok && t > 0 && g.scores[d.Name()] >= t {
			g.raised = append(g.raised, g.newAlarm(d, step, t))
		}
	}
	for _, d := range g.dets {
		if t, ok := g.stop[d.Name()]; ok && g.scores[d.Name()] >= t {
			return g.scores, g.newAlarm(d, step, t)
		}
	}
	return g.scores, nil
}

// newAlarm is detector d's alarm at step for threshold t, with the
// verdict it states.
func (g *Guard) newAlarm(d Detector, step int64, t float64) *Alarm {
	a := &Alarm{Detector: d.Name(), Step: step, Score: g.scores[d.Name()], Threshold: t, Verdict: detectors[d.Name()].Verdict}
	if cp, ok := d.(CrossPartyDetector); ok {
		a.Verdict = "passive party " + g.suspect(cp) + " is suspected of cheating (a backdoor or free-riding): its embedding disagrees with what the other parties' embeddings predict"
	}
	return a
}

// SetAlarms sets each detector's alarm threshold: a batch whose score
// reaches it raises an alarm (Raised) that, unlike a stop threshold,
// leaves the run going; 0 or no entry: none.
func (g *Guard) SetAlarms(thresholds map[string]float64) {
	if g != nil {
		g.alarm = thresholds
	}
}

// Raised returns the alarms the last batch raised against the alarm
// thresholds (SetAlarms), in the detectors' order; valid until the next
// batch.
func (g *Guard) Raised() []*Alarm {
	if g == nil {
		return nil
	}
	return g.raised
}

// Eval checks the passive party's gain at the evaluation after step
// steps (nil: not measured).
func (g *Guard) Eval(step int64, gain *float64) error {
	if g != nil && g.minGain > 0 && gain != nil && *gain < g.minGain {
		return &Alarm{Detector: "contribution", Step: step, Score: *gain, Threshold: g.minGain, Below: true}
	}
	return nil
}
