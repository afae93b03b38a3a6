package passive

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/splitguard/splitguard/data"
	"github.com/splitguard/splitguard/model"
	"github.com/splitguard/splitguard/schedule"
	"github.com/splitguard/splitguard/tensor"
	"github.com/splitguard/splitguard/transport"
	"github.com/splitguard/splitguard/transport/wire"
)

// recordConn answers every training message with a gradient of 0.5s and
// keeps what it was sent.
type recordConn struct {
	ids  [][]uint64
	sent [][]float32
}

func (c *recordConn) Exchange(_ context.Context, f *transport.Forward) (*transport.Backward, error) {
	c.ids = append(c.ids, slices.Clone(f.IDs))
	c.sent = append(c.sent, slices.Clone(f.Embedding.Data))
	g := tensor.New(f.Embedding.Rows, f.Embedding.Cols)
	for i := range g.Data {
		g.Data[i] = 0.5
	}
	return &transport.Backward{Step: f.Step, Batch: f.Batch, Grad: g}, nil
}

func (c *recordConn) Close() error { return nil }

// scriptedCheat records what it is given and returns what the test set.
type scriptedCheat struct {
	featIDs, gradIDs [][]uint64
	grads            [][]float32
	send             float32 // every sent value
	gradShape        [2]int  // the changed gradient's shape (0: g's)
	out              *tensor.Matrix
}

func (s *scriptedCheat) Features(_ int64, ids []uint64, _ *data.Batch) error {
	s.featIDs = append(s.featIDs, slices.Clone(ids))
	return nil
}

func (s *scriptedCheat) Send(_ int64, _ []uint64, e *tensor.Matrix) (*tensor.Matrix, error) {
	s.out = s.out.Resize(e.Rows, e.Cols)
	for i := range s.out.Data {
		s.out.Data[i] = s.send
	}
	return s.out, nil
}

func (s *scriptedCheat) Gradient(_ int64, ids []uint64, g *tensor.Matrix) (*tensor.Matrix, error) {
	s.gradIDs = append(s.gradIDs, slices.Clone(ids))
	s.grads = append(s.grads, slices.Clone(g.Data))
	if s.gradShape[0] > 0 {
		return tensor.New(s.gradShape[0], s.gradShape[1]), nil
	}
	return g, nil
}

// cheatParty is a passive party over 6 rows (IDs 20…25) of two numeric
// columns, batches of 3, one epoch, no test rows.
func cheatParty(t *testing.T, cheat Cheat, enc wire.Encoding) *Passive {
	t.Helper()
	f := &data.Features{Rows: 6, NumDense: 2, Dense: []float32{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}}
	bottom, err := model.NewBottom(model.Config{Widths: []int{4}, Cut: 1, LR: 1e-3, Seed: 1}, model.SchemaOf(f))
	if err != nil {
		t.Fatal(err)
	}
	sched, err := schedule.New(6, 3, 1)
	if err != nil {
		t.Fatal(err)
	}
	p, err := New(bottom, Split{IDs: []uint64{20, 21, 22, 23, 24, 25}, X: f}, Split{}, sched,
		Config{Epochs: 1, Cheat: cheat, WireEmbedding: enc})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestCheatSeesAndChangesTheStep: the cheat is given each batch's IDs as
// they are sent, its embedding is what the active party receives
// (rounded to the wire encoding, as an honest one), and it gets the
// received gradient; a changed gradient of the wrong shape is refused.
func TestCheatSeesAndChangesTheStep(t *testing.T) {
	for _, tc := range []struct {
		enc  wire.Encoding
		send float32
		want float32
	}{
		{wire.F32, 1.00001, 1.00001},
		{wire.BF16, 1.00001, 1}, // bfloat16 keeps 8 bits of mantissa: 1 + 1e-5 rounds to 1
	} {
		cheat := &scriptedCheat{send: tc.send}
		conn := &recordConn{}
		if err := cheatParty(t, cheat, tc.enc).Run(context.Background(), conn); err != nil {
			t.Fatal(err)
		}
		if len(conn.ids) != 2 || !slices.EqualFunc(conn.ids, cheat.featIDs, slices.Equal) || !slices.EqualFunc(conn.ids, cheat.gradIDs, slices.Equal) {
			t.Errorf("sent IDs %v; the cheat's features saw %v, its gradients %v", conn.ids, cheat.featIDs, cheat.gradIDs)
		}
		for _, sent := range conn.sent {
			for _, v := range sent {
				if v != tc.want {
					t.Fatalf("encoding %v: sent %v, want every value %v", tc.enc, sent, tc.want)
				}
			}
		}
		for _, g := range cheat.grads {
			if len(g) != 12 || slices.ContainsFunc(g, func(v float32) bool { return v != 0.5 }) {
				t.Errorf("the cheat got gradient %v, want the 3×4 received 0.5s", g)
			}
		}
	}
	cheat := &scriptedCheat{gradShape: [2]int{2, 4}}
	err := cheatParty(t, cheat, wire.F32).Run(context.Background(), &recordConn{})
	if err == nil || !strings.Contains(err.Error(), "changed gradient is 2×4, want 3×4") {
		t.Errorf("error %v, want the changed gradient's shape refused", err)
	}
}
