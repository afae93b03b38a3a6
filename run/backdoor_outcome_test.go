package run

import (
	"errors"
	"fmt"
	"io"
	"math"
	"testing"

	"github.com/splitguard/splitguard/config"
	"github.com/splitguard/splitguard/data"
	"github.com/splitguard/splitguard/integrity"
	"github.com/splitguard/splitguard/tensor"
)

// firstColumn is a bottom whose embedding is the batch's one dense
// column, and a top whose logit is that embedding: the outcome's
// arithmetic can then be followed by hand.
type firstColumn struct{}

func (firstColumn) Forward(in *data.Batch) (*tensor.Matrix, error) {
	e := tensor.New(in.Rows, 1)
	copy(e.Data, in.Dense.Data)
	return e, nil
}
func (firstColumn) Outputs() []*tensor.Matrix                         { return nil }
func (firstColumn) Backward(*tensor.Matrix) ([]*tensor.Matrix, error) { return nil, errUnused }
func (firstColumn) Backprop(*tensor.Matrix) ([]*tensor.Matrix, error) { return nil, errUnused }
func (firstColumn) Step() error                                       { return errUnused }
func (firstColumn) CutDim() int                                       { return 1 }
func (firstColumn) Save(io.Writer) error                              { return errUnused }
func (firstColumn) Load(io.Reader) error                              { return errUnused }

type identityTop struct{}

func (identityTop) Forward(e *tensor.Matrix, _ *data.Batch) ([]float32, error) {
	return append([]float32(nil), e.Data...), nil
}
func (identityTop) Backward([]float32) (*tensor.Matrix, error) { return nil, errUnused }
func (identityTop) Step() error                                { return errUnused }
func (identityTop) Save(io.Writer) error                       { return errUnused }
func (identityTop) Load(io.Reader) error                       { return errUnused }

var errUnused = errors.New("not used by the outcome")

// TestBackdoorOutcomeByHand: six test rows whose logit is their one
// numeric value x = −1, 2, −3, 4, 1, 0.5 with labels 0, 0, 0, 1, 1, 0
// and target 1. The four rows of class 0 have x −1, 2, −3, 0.5: two
// predicted 1 without the trigger (clean rate 2/4). The trigger writes v
// in that column: v = −2 sends none of them to class 1 (rate 0), v = 0.3
// all four (rate 1); the test AUC of x is 7/8 (positive 4 above all four
// negatives −1, 2, −3, 0.5, positive 1 above three).
func TestBackdoorOutcomeByHand(t *testing.T) {
	ids := []uint64{1, 2, 3, 4, 5, 6}
	x := []float32{-1, 2, -3, 4, 1, 0.5}
	f := &data.Features{Rows: 6, NumDense: 1, Dense: x}
	pv := &view{test: &data.Dataset{IDs: ids, X: f}}
	av := &view{test: &data.Dataset{IDs: ids, Labels: []uint8{0, 0, 0, 1, 1, 0}}}
	for _, tc := range []struct {
		v, asr float64
	}{{-2, 0}, {0.3, 1}} {
		bd, err := integrity.NewBackdoor("gradient_replacement", integrity.BackdoorConfig{Known: []uint64{4}, TrainIDs: ids, Train: f, TriggerValue: tc.v})
		if err != nil {
			t.Fatal(err)
		}
		cfg := &config.Config{Backdoor: "gradient_replacement", BackdoorTarget: 1}
		out, err := backdoorOutcome(cfg, bd, []uint64{4}, firstColumn{}, identityTop{}, false, pv, av)
		if err != nil {
			t.Fatal(err)
		}
		if out.ASR != tc.asr || out.ASRRows != 4 || out.CleanRate != 0.5 || math.Abs(out.CleanTestAUC-0.875) > 1e-12 {
			t.Errorf("trigger %g: ASR %g over %d rows, clean rate %g, clean AUC %g; want %g over 4, 0.5, 0.875",
				tc.v, out.ASR, out.ASRRows, out.CleanRate, out.CleanTestAUC, tc.asr)
		}
		// Four rows of class 0, one per quarter; the trigger gives each
		// the logit v.
		if want := []float64{tc.asr, tc.asr, tc.asr, tc.asr}; fmt.Sprint(out.ASRByConfidence) != fmt.Sprint(want) {
			t.Errorf("trigger %g: by confidence %v, want %v", tc.v, out.ASRByConfidence, want)
		}
	}
	if x[0] != -1 || x[5] != 0.5 {
		t.Errorf("the test rows' features were changed: %v", x)
	}
}
