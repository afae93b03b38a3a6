package active

import (
	"bytes"
	"math"
	"slices"
	"testing"

	"github.com/splitguard/splitguard/data"
	"github.com/splitguard/splitguard/model"
	"github.com/splitguard/splitguard/protect"
	"github.com/splitguard/splitguard/schedule"
	"github.com/splitguard/splitguard/tensor"
	"github.com/splitguard/splitguard/transport"
)

// newTestActive is an MLP active party over n training rows with IDs
// 100, 101, … and alternating labels, batch 4, cut width 3.
func newTestActive(t *testing.T, n int) (*Active, *schedule.Schedule) {
	t.Helper()
	prot, err := protect.New("iso", protect.Params{"iso_t": 1})
	if err != nil {
		t.Fatal(err)
	}
	return newTestActiveWith(t, n, Config{Protector: prot, Seed: 5})
}

// newTestActiveWith is newTestActive's party with configuration cfg.
func newTestActiveWith(t *testing.T, n int, cfg Config) (*Active, *schedule.Schedule) {
	t.Helper()
	d := &data.Dataset{X: &data.Features{Rows: n, NumDense: 1, Dense: make([]float32, n)}}
	for i := range n {
		d.IDs = append(d.IDs, uint64(100+i))
		d.Labels = append(d.Labels, uint8(i%2))
	}
	top, err := model.NewTop(model.Config{Widths: []int{3, 4}, Cut: 1, EmbDim: 2, LR: 1e-2, Seed: 1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	sched, err := schedule.New(n, 4, 7)
	if err != nil {
		t.Fatal(err)
	}
	a, err := New(top, d, d, sched, 3, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return a, sched
}

// forward is the valid training message of a's next step.
func forward(a *Active, sched *schedule.Schedule) *transport.Forward {
	epoch, b := sched.Position(a.step)
	rows := sched.Rows(sched.Order(epoch, nil), b)
	f := &transport.Forward{Phase: transport.Train, Step: a.step, Epoch: epoch, Batch: b, Embedding: tensor.New(len(rows), 3)}
	for i, r := range rows {
		f.IDs = append(f.IDs, a.train.IDs[r])
		for j := range 3 {
			f.Embedding.Data[3*i+j] = float32(i+1) * 0.1 * float32(j-1)
		}
	}
	return f
}

func state(t *testing.T, a *Active) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := a.SaveState(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestRejectedMessageChangesNothing sends malformed and replayed training
// messages to an active party after one good step: each is refused, the
// party's saved state (model, optimiser, step, random stream) is byte for
// byte what it was before, and the next good step gives the same gradient
// as on a twin party that never saw the bad messages.
func TestRejectedMessageChangesNothing(t *testing.T) {
	a, sched := newTestActive(t, 16)
	twin, _ := newTestActive(t, 16)
	for _, p := range []*Active{a, twin} {
		if _, err := p.TrainStep(forward(p, sched)); err != nil {
			t.Fatal(err)
		}
	}
	replay := forward(a, sched)
	replay.Step = 0 // step 0 was already applied
	bad := map[string]func(f *transport.Forward){
		"replayed step":    func(f *transport.Forward) { *f = *replay },
		"wrong IDs":        func(f *transport.Forward) { f.IDs = append([]uint64{f.IDs[1], f.IDs[0]}, f.IDs[2:]...) },
		"wrong batch":      func(f *transport.Forward) { f.Batch++ },
		"wrong width":      func(f *transport.Forward) { f.Embedding = tensor.New(f.Embedding.Rows, 2) },
		"NaN in embedding": func(f *transport.Forward) { f.Embedding.Data[2] = float32(math.NaN()) },
		"eval phase":       func(f *transport.Forward) { f.Phase = transport.Eval },
	}
	before := state(t, a)
	for name, spoil := range bad {
		f := forward(a, sched)
		spoil(f)
		if _, err := a.TrainStep(f); err == nil {
			t.Fatalf("%s: accepted", name)
		} else {
			t.Logf("%s: %v", name, err)
		}
		if !bytes.Equal(state(t, a), before) {
			t.Fatalf("%s: the refused message changed the party's state", name)
		}
	}
	got, err := a.TrainStep(forward(a, sched))
	if err != nil {
		t.Fatal(err)
	}
	gotGrad := append([]float32(nil), got.Grad.Data...)
	want, err := twin.TrainStep(forward(twin, sched))
	if err != nil {
		t.Fatal(err)
	}
	if len(gotGrad) == 0 || !slices.Equal(gotGrad, want.Grad.Data) || !bytes.Equal(state(t, a), state(t, twin)) {
		t.Fatal("after the refused messages the party diverged from its twin")
	}
}
