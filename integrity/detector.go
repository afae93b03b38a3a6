package integrity

import (
	"fmt"
	"sort"

	"github.com/splitguard/splitguard/tensor"
)

// Detector scores the embedding of every training batch the active
// party receives, against what it saw of the same party before.
type Detector interface {
	Name() string
	// Observe returns the batch's score at step: 0 for nothing
	// suspicious, larger for more (each detector says its scale).
	Observe(step int64, e *tensor.Matrix) float64
}

// RowsDetector is a detector that also reads which rows of the
// training split the batch holds (the active party knows them: it
// draws the schedule). The guard calls ObserveRows instead of Observe
// when the caller gives the rows.
type RowsDetector interface {
	Detector
	ObserveRows(step int64, rows []int, e *tensor.Matrix) float64
}

// DetectorSpec declares a detector.
type DetectorSpec struct {
	Name string
	Help string
	New  func() Detector
	// Default puts the detector in the set a two-party run has on when
	// key detectors is not given (DefaultDetectors), DefaultAlarm its
	// alarm threshold there (0: none). Only a detector whose honest
	// score cannot reach that threshold by construction belongs there
	// (docs/methods/integrity.md §11f).
	Default      bool
	DefaultAlarm float64
	// Verdict is what an alarm of the detector says of the passive
	// party (empty: a generic suspicion of cheating).
	Verdict string
}

var detectors = map[string]DetectorSpec{}

// RegisterDetector adds a detector; it panics on a duplicate or empty
// name.
func RegisterDetector(s DetectorSpec) {
	if s.Name == "" || s.New == nil {
		panic("integrity: a detector needs a name and New")
	}
	if _, ok := detectors[s.Name]; ok {
		panic("integrity: detector " + s.Name + " registered twice")
	}
	detectors[s.Name] = s
}

// DetectorNames lists the registered detectors, sorted.
func DetectorNames() []string {
	out := make([]string, 0, len(detectors))
	for n := range detectors {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// DefaultDetectors lists the detectors on by default, sorted.
func DefaultDetectors() []string {
	var out []string
	for _, n := range DetectorNames() {
		if detectors[n].Default {
			out = append(out, n)
		}
	}
	return out
}

// DefaultAlarm returns the named detector's default alarm threshold
// and whether it has one.
func DefaultAlarm(name string) (float64, bool) {
	s, ok := detectors[name]
	return s.DefaultAlarm, ok && s.DefaultAlarm > 0
}

// NewDetector returns a fresh detector by name.
func NewDetector(name string) (Detector, error) {
	s, ok := detectors[name]
	if !ok {
		return nil, fmt.Errorf("integrity: unknown detector %q (known: %v)", name, DetectorNames())
	}
	return s.New(), nil
}

// Alarm is the error that ends a run whose detector's score reached the
// threshold set for it (Below: a score that fell below it, as the
// contribution measure's).
type Alarm struct {
	Detector  string
	Step      int64
	Score     float64
	Threshold float64
	Below     bool
	// Verdict is what the alarm suspects (empty: the passive party of
	// free-riding).
	Verdict string
}

func (a *Alarm) Error() string {
	rel := "reaching"
	if a.Below {
		rel = "below"
	}
	verdict := a.Verdict
	if verdict == "" {
		verdict = "the passive party is suspected of cheating (free-riding or a backdoor)"
	}
	return fmt.Sprintf("integrity: %s scored %.4g at step %d, %s the threshold %.4g: %s",
		a.Detector, a.Score, a.Step, rel, a.Threshold, verdict)
}
