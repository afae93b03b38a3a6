package rundir

import (
	"fmt"
	"slices"

	"github.com/splitguard/splitguard/config"
)

// IntegrityAlarmRecord is one integrity detector's alarm over a run: the
// batches whose score reached its alarm threshold (key integrity_alarm),
// which warn without ending the run.
type IntegrityAlarmRecord struct {
	Detector  string  `json:"detector"`
	Threshold float64 `json:"threshold"`
	// FirstStep is the first alarmed batch's step, Batches how many
	// batches reached the threshold, MaxScore the largest of their scores.
	FirstStep int64   `json:"first_step"`
	Batches   int     `json:"batches"`
	MaxScore  float64 `json:"max_score"`
	// Verdict is the first alarm's message: what it suspects.
	Verdict string `json:"verdict"`
}

// IntegrityAlarm records that detector's score at step reached its
// alarm threshold; msg is the alarm's message (integrity.Alarm). The
// first alarm of each detector goes to the log as a warning; the summary
// holds one record a detector and a warning naming the keys.
func (r *Recorder) IntegrityAlarm(detector string, step int64, score, threshold float64, msg string) {
	i := slices.IndexFunc(r.integAlarms, func(a IntegrityAlarmRecord) bool { return a.Detector == detector })
	if i >= 0 {
		a := &r.integAlarms[i]
		a.Batches++
		a.MaxScore = max(a.MaxScore, score)
		return
	}
	r.integAlarms = append(r.integAlarms, IntegrityAlarmRecord{Detector: detector, Threshold: threshold,
		FirstStep: step, Batches: 1, MaxScore: score, Verdict: msg})
	if r.hooks.Logger != nil {
		r.hooks.Logger.Warn("integrity alarm: "+msg+" (the run goes on; key integrity_stop ends it)", "detector", detector, "step", step)
	}
}

// summaryAlarms puts the integrity alarms in the summary, with a warning
// each.
func (r *Recorder) summaryAlarms(s *Summary) {
	if len(r.integAlarms) == 0 {
		return
	}
	s.IntegrityAlarms = slices.Clone(r.integAlarms)
	for _, a := range r.integAlarms {
		s.warn(config.Warning{Text: fmt.Sprintf("integrity alarm: detector %s reached its alarm threshold %.4g on %d training batches, first at step %d (key integrity_alarm): %s",
			a.Detector, a.Threshold, a.Batches, a.FirstStep, a.Verdict), Keys: []string{"integrity_alarm"}})
	}
}
