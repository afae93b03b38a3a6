package metrics

import "fmt"

// AttackSuccessRate is a backdoor's success on triggered rows: among the
// rows whose label is not target, the share whose logit predicts target
// (class 1 when the logit is > 0, else 0), and how many such rows there
// are (0 rows: rate 0).
func AttackSuccessRate(logits []float32, labels []uint8, target uint8) (rate float64, rows int, err error) {
	if len(logits) != len(labels) {
		return 0, 0, fmt.Errorf("metrics: %d logits for %d labels", len(logits), len(labels))
	}
	if target > 1 {
		return 0, 0, fmt.Errorf("metrics: target class %d, want 0 or 1", target)
	}
	hit := 0
	for i, y := range labels {
		if y == target {
			continue
		}
		rows++
		var pred uint8
		if logits[i] > 0 {
			pred = 1
		}
		if pred == target {
			hit++
		}
	}
	if rows == 0 {
		return 0, 0, nil
	}
	return float64(hit) / float64(rows), rows, nil
}
