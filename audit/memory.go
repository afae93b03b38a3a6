package audit

import (
	"fmt"

	"github.com/splitguard/splitguard/attack"
	"github.com/splitguard/splitguard/metrics"
)

// memoryLayers are the layers the epoch-memory attack remembers: one
// d-wide running sum per example and layer is the attack's whole cost
// (~0.5 GB per layer for 1M examples at d = 128), so it keeps the two the
// papers report.
var memoryLayers = map[string]bool{"cut": true, "first": true}

func isMemoryAttack(name string) bool {
	return name == attack.MemoryNormName || name == attack.MemoryCosineName
}

// EndEpoch scores the epoch-memory attacks over every example seen so far
// against the true labels (labelOf maps an example ID to its label) and
// records one AUC per attack and layer for the epoch. It returns those
// AUCs keyed "ATTACK/LAYER" (nil where undefined), or nil when no memory
// attack is configured.
func (a *Auditor) EndEpoch(labelOf func(id uint64) (uint8, bool)) (map[string]*float64, error) {
	if a.memory == nil {
		return nil, nil
	}
	out := map[string]*float64{}
	for _, layer := range a.memory.Layers() {
		if err := a.memory.Scores(layer, &a.memScores); err != nil {
			return nil, err
		}
		a.memLabels = grow(a.memLabels, len(a.memScores.IDs))
		for i, id := range a.memScores.IDs {
			y, ok := labelOf(id)
			if !ok {
				return nil, fmt.Errorf("audit: memory attack: no label for example %d", id)
			}
			a.memLabels[i] = y
		}
		for _, s := range []struct {
			name   string
			scores []float64
		}{{attack.MemoryNormName, a.memScores.Norm}, {attack.MemoryCosineName, a.memScores.Cosine}} {
			if !a.memNames[s.name] || s.scores == nil {
				continue
			}
			auc, ok := a.leak.Observe(s.name, layer, s.scores, a.memLabels, nil)
			key := metrics.Key(s.name, layer)
			out[key] = nil
			if ok {
				v := auc
				out[key] = &v
			}
		}
	}
	return out, nil
}
