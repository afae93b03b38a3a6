package integrity

import (
	"github.com/splitguard/splitguard/data"
	"github.com/splitguard/splitguard/tensor"
)

// dryRun is a backdoor that changes nothing: the party is honest, while
// the attack follows the honest embeddings as it would (VILLAIN's
// moments and trigger, picked at the same step), so that its trigger can
// be measured on an honestly trained model.
type dryRun struct{ Backdoor }

func (d dryRun) Features(int64, []uint64, *data.Batch) error { return nil }

func (d dryRun) Send(step int64, ids []uint64, e *tensor.Matrix) (*tensor.Matrix, error) {
	if _, err := d.Backdoor.Send(step, ids, e); err != nil {
		return nil, err
	}
	return e, nil
}

func (d dryRun) Gradient(_ int64, _ []uint64, g *tensor.Matrix) (*tensor.Matrix, error) {
	return g, nil
}
