package active

import (
	"bytes"
	"slices"
	"testing"

	"github.com/splitguard/splitguard/protect"
	"github.com/splitguard/splitguard/schedule"
	"github.com/splitguard/splitguard/tensor"
	"github.com/splitguard/splitguard/transport/wire"
)

// newFeedbackActive is newTestActive's party without protection, sending
// int8 gradients with error feedback, and its schedule.
func newFeedbackActive(t *testing.T, n int, obs func(*Observation) error) (*Active, *schedule.Schedule) {
	t.Helper()
	none, err := protect.New("none", nil)
	if err != nil {
		t.Fatal(err)
	}
	return newTestActiveWith(t, n, Config{Protector: none, Seed: 5, WireGradient: wire.Int8, WireFeedback: true, Observer: obs})
}

// TestGradientFeedback runs three epochs of an active party sending int8
// gradients with error feedback and checks every gradient it sends
// against a bookkeeping of its own: the clean gradient (no protection)
// plus the row's residual from its last epoch, rounded to int8, the new
// residual being the difference. The observation the audit reads is the
// gradient sent. A party restored from a state saved after the first
// epoch sends the same gradients afterwards as the one that ran on.
func TestGradientFeedback(t *testing.T) {
	const n = 8
	resid := make([][]float32, n)
	for i := range resid {
		resid[i] = make([]float32, 3)
	}
	var observed *tensor.Matrix
	check := func(ob *Observation) error {
		want := tensor.New(len(ob.Rows), 3)
		for j, r := range ob.Rows {
			for c := range 3 {
				want.Data[3*j+c] = ob.Clean.Data[3*j+c] + resid[r][c]
			}
		}
		sum := append([]float32(nil), want.Data...)
		if err := wire.Int8.Round(want); err != nil {
			return err
		}
		if !slices.Equal(ob.Protected.Data, want.Data) {
			t.Errorf("step %d: sent %v, want %v", ob.Step, ob.Protected.Data, want.Data)
		}
		for j, r := range ob.Rows {
			for c := range 3 {
				resid[r][c] = sum[3*j+c] - want.Data[3*j+c]
			}
		}
		observed = ob.Protected
		return nil
	}
	a, sched := newFeedbackActive(t, n, check)
	var saved []byte
	var sent [][]float32
	nonzero := false
	for step := range 3 * n / 4 {
		if step == n/4 {
			saved = state(t, a)
		}
		b, err := a.TrainStep(forward(a, sched))
		if err != nil {
			t.Fatal(err)
		}
		if b.Grad != observed {
			t.Fatalf("step %d: the observation is not the gradient sent", step)
		}
		sent = append(sent, append([]float32(nil), b.Grad.Data...))
		for _, r := range resid {
			nonzero = nonzero || slices.ContainsFunc(r, func(v float32) bool { return v != 0 })
		}
	}
	if !nonzero {
		t.Fatal("no residual was ever left: the test shows nothing")
	}
	b, sched2 := newFeedbackActive(t, n, nil)
	if err := b.LoadState(bytes.NewReader(saved)); err != nil {
		t.Fatal(err)
	}
	for step := n / 4; step < 3*n/4; step++ {
		g, err := b.TrainStep(forward(b, sched2))
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(g.Grad.Data, sent[step]) {
			t.Fatalf("restored party, step %d: sent %v, the uninterrupted one %v", step, g.Grad.Data, sent[step])
		}
	}
	plain, _ := newTestActive(t, n)
	if err := plain.LoadState(bytes.NewReader(saved)); err == nil {
		t.Error("a party without error feedback loaded a state with it")
	}
}
