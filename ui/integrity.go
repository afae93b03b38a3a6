package ui

import (
	"math"
	"sort"
)

// addIntegrity appends an evaluation's detector scores (each detector's
// largest since the previous evaluation) at step x; NaN and ±Inf are
// left out. The caller holds f.mu.
func (f *Feed) addIntegrity(x float64, scores map[string]float64) {
	for name, v := range scores {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			continue
		}
		if f.integ == nil {
			f.integ = map[string][][2]float64{}
		}
		f.integ[name] = append(f.integ[name], [2]float64{x, v})
	}
}

// snapshotIntegrity copies the detectors' series into st.
func (f *Feed) snapshotIntegrity(st *State) {
	if len(f.integ) == 0 {
		return
	}
	st.Integrity = make(map[string][][2]float64, len(f.integ))
	for k, pts := range f.integ {
		st.Integrity[k] = append([][2]float64{}, pts...)
		st.IntegrityKeys = append(st.IntegrityKeys, k)
	}
	sort.Strings(st.IntegrityKeys)
}
