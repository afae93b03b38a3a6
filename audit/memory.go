package audit

import (
	"fmt"

	"github.com/splitguard/splitguard/internal/buf"
	"github.com/splitguard/splitguard/metrics"
)

// memoryLayers are the layers the epoch-memory attack remembers: one
// d-wide running sum per example and layer is the attack's whole cost
// (~0.5 GB per layer for 1M examples at d = 128), so it keeps the two the
// papers report.
var memoryLayers = map[string]bool{"cut": true, "first": true}

// EndEpoch scores the epoch attacks over every example seen so far
// against the true labels (labelOf maps an example ID to its label) and
// records one AUC per attack and layer for the epoch. It returns those
// AUCs keyed "ATTACK/LAYER" (nil where undefined), or nil when no epoch
// attack is configured.
func (a *Auditor) EndEpoch(labelOf func(id uint64) (uint8, bool)) (map[string]*float64, error) {
	if a.memory == nil {
		return nil, nil
	}
	out := map[string]*float64{}
	for _, layer := range a.memory.Layers() {
		ids := a.memory.IDs(layer)
		a.memLabels = buf.Grow(a.memLabels, len(ids))
		for i, id := range ids {
			y, ok := labelOf(id)
			if !ok {
				return nil, fmt.Errorf("epoch attacks: no label for example %d", id)
			}
			a.memLabels[i] = y
		}
		for _, at := range a.epoch {
			scores, err := at.ScoreEpoch(a.memory, layer, a.memScores)
			if err != nil {
				return nil, fmt.Errorf("%s at layer %s: %w", at.Name(), layer, err)
			}
			if scores == nil {
				continue
			}
			a.memScores = scores
			auc, ok := a.leak.Observe(at.Name(), layer, scores, a.memLabels, nil)
			key := metrics.Key(at.Name(), layer)
			out[key] = nil
			if ok {
				v := auc
				out[key] = &v
			}
		}
	}
	return out, nil
}
