package active

import (
	"bytes"
	"slices"
	"testing"

	"github.com/splitguard/splitguard/protect"
)

// newBlocksActive is newTestActive's party with two passive parties'
// blocks of the 3-wide cut, each under its own isotropic noise (a
// protection drawing from the block's random stream).
func newBlocksActive(t *testing.T, n int) *Active {
	t.Helper()
	var blocks []Block
	for k, cols := range [][2]int{{0, 1}, {1, 3}} {
		p, err := protect.New("iso", protect.Params{"iso_t": 1})
		if err != nil {
			t.Fatal(err)
		}
		blocks = append(blocks, Block{Name: string(rune('a' + k)), Lo: cols[0], Hi: cols[1], Protector: p})
	}
	none, err := protect.New("none", nil)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := newTestActiveWith(t, n, Config{Protector: none, Seed: 5, Blocks: blocks})
	return a
}

// TestBlocksStateResumes: a party with several passive parties' blocks
// restored from a state saved after two steps sends the same protected
// gradients afterwards as the party that ran on (each block's noise is
// drawn from its own random stream, which the state must carry: a party
// restored without it sends other noise), and a party without blocks
// refuses that state.
func TestBlocksStateResumes(t *testing.T) {
	const n, steps, at = 8, 6, 2
	a := newBlocksActive(t, n)
	var saved []byte
	var sent [][]float32
	for step := range steps {
		if step == at {
			saved = state(t, a)
		}
		b, err := a.TrainStep(forward(a, a.sched))
		if err != nil {
			t.Fatal(err)
		}
		sent = append(sent, slices.Clone(b.Grad.Data))
	}
	fresh := newBlocksActive(t, n)
	if err := fresh.LoadState(bytes.NewReader(saved)); err != nil {
		t.Fatal(err)
	}
	for step := at; step < steps; step++ {
		b, err := fresh.TrainStep(forward(fresh, fresh.sched))
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(b.Grad.Data, sent[step]) {
			t.Fatalf("restored party, step %d: sent %v, the uninterrupted one %v", step, b.Grad.Data, sent[step])
		}
	}
	plain, _ := newTestActive(t, n)
	if err := plain.LoadState(bytes.NewReader(saved)); err == nil {
		t.Error("a party without blocks loaded a state with them")
	}
}
