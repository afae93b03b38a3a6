package active

import (
	"fmt"

	"github.com/splitguard/splitguard/transport/wire"
)

// newFeedback returns the error feedback of cfg (nil when off) for
// examples training rows of width cutDim.
func newFeedback(cfg Config, examples, cutDim int) (*wire.Feedback, error) {
	if !cfg.WireFeedback {
		return nil, nil
	}
	fb, err := wire.NewFeedback(cfg.WireGradient, examples, cutDim)
	if err != nil {
		return nil, fmt.Errorf("active: error feedback of the gradients: %w", err)
	}
	return fb, nil
}

// roundGradient rounds the protected gradient of the training rows rows
// to the gradients' wire encoding, through the error feedback when it is
// on: each row then carries its training row's residual from the last
// time that row was sent (the previous epoch).
func (a *Active) roundGradient(rows []int) error {
	if a.feedback != nil {
		return a.feedback.Round(a.protected, rows)
	}
	return a.cfg.WireGradient.Round(a.protected)
}
