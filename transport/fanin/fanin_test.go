package fanin

import (
	"context"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/splitguard/splitguard/tensor"
	"github.com/splitguard/splitguard/transport"
	"github.com/splitguard/splitguard/transport/inproc"
)

func mat(r, c int, v ...float32) *tensor.Matrix { return &tensor.Matrix{Rows: r, Cols: c, Data: v} }

// parties returns k in-process pipes: the passive ends and the joined
// active end.
func parties(t *testing.T, agg Aggregation, widths []int) ([]transport.PassiveConn, transport.ActiveConn) {
	t.Helper()
	var ps []transport.PassiveConn
	var as []transport.ActiveConn
	for range widths {
		p, a := inproc.Pipe()
		ps, as = append(ps, p), append(as, a)
	}
	j, err := Join(as, agg, widths)
	if err != nil {
		t.Fatal(err)
	}
	return ps, j
}

// send has every party k exchange fs[k] on its own goroutine; the
// answers (or errors) arrive on the returned channels in party order.
func send(ps []transport.PassiveConn, fs []*transport.Forward) []chan *transport.Backward {
	out := make([]chan *transport.Backward, len(ps))
	for k := range ps {
		out[k] = make(chan *transport.Backward, 1)
		go func() {
			b, err := ps[k].Exchange(context.Background(), fs[k])
			if err != nil {
				b = nil
			}
			out[k] <- b
		}()
	}
	return out
}

func fwd(step int64, ids []uint64, e *tensor.Matrix) *transport.Forward {
	return &transport.Forward{Phase: transport.Train, Step: step, IDs: ids, Embedding: e}
}

// TestJoinByHand checks the combination and the split against values
// worked out by hand.
func TestJoinByHand(t *testing.T) {
	ids := []uint64{7, 9}
	for _, tc := range []struct {
		name      string
		agg       Aggregation
		widths    []int
		embs      []*tensor.Matrix
		wantEmb   []float32
		grad      *tensor.Matrix
		wantGrads [][]float32
	}{
		{"concat 2+1", Concat, []int{2, 1},
			[]*tensor.Matrix{mat(2, 2, 1, 2, 3, 4), mat(2, 1, 5, 6)},
			[]float32{1, 2, 5, 3, 4, 6},
			mat(2, 3, .1, .2, .3, .4, .5, .6),
			[][]float32{{.1, .2, .4, .5}, {.3, .6}}},
		{"concat 1+1+2", Concat, []int{1, 1, 2},
			[]*tensor.Matrix{mat(2, 1, 1, 2), mat(2, 1, 3, 4), mat(2, 2, 5, 6, 7, 8)},
			[]float32{1, 3, 5, 6, 2, 4, 7, 8},
			mat(2, 4, 1, 2, 3, 4, 5, 6, 7, 8),
			[][]float32{{1, 5}, {2, 6}, {3, 4, 7, 8}}},
		{"sum", Sum, []int{2, 2},
			[]*tensor.Matrix{mat(2, 2, 1, 2, 3, 4), mat(2, 2, 10, 20, 30, 40)},
			[]float32{11, 22, 33, 44},
			mat(2, 2, -1, 0.5, 2, 3),
			[][]float32{{-1, 0.5, 2, 3}, {-1, 0.5, 2, 3}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ps, j := parties(t, tc.agg, tc.widths)
			var fs []*transport.Forward
			for _, e := range tc.embs {
				fs = append(fs, fwd(0, ids, e))
			}
			answers := send(ps, fs)
			f, err := j.Recv(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(f.Embedding.Data, tc.wantEmb) || f.Embedding.Cols != tc.agg.Width(tc.widths) || !slices.Equal(f.IDs, ids) {
				t.Fatalf("joined embedding %v (%d wide), want %v", f.Embedding.Data, f.Embedding.Cols, tc.wantEmb)
			}
			if err := j.Reply(context.Background(), &transport.Backward{Step: 0, Batch: 0, Grad: tc.grad}); err != nil {
				t.Fatal(err)
			}
			for k, ch := range answers {
				b := <-ch
				if b == nil || !slices.Equal(b.Grad.Data, tc.wantGrads[k]) || b.Grad.Cols != tc.widths[k] {
					t.Fatalf("party %d got %+v, want gradient %v", k+1, b, tc.wantGrads[k])
				}
			}
			for _, p := range ps {
				p.Close()
			}
			if _, err := j.Recv(context.Background()); !errors.Is(err, io.EOF) {
				t.Fatalf("after every party closed: %v, want io.EOF", err)
			}
		})
	}
}

// TestJoinOne checks that one party's connection is passed through.
func TestJoinOne(t *testing.T) {
	_, a := inproc.Pipe()
	j, err := Join([]transport.ActiveConn{a}, Concat, []int{4})
	if err != nil || j != a {
		t.Fatalf("Join of one connection = %v, %v; want the connection itself", j, err)
	}
}

// TestJoinRefuses checks that disagreeing messages, a party that closes
// early and bad arguments are errors naming the party.
func TestJoinRefuses(t *testing.T) {
	ids := []uint64{1, 2}
	e := func() *tensor.Matrix { return mat(2, 1, 0, 0) }
	for _, tc := range []struct {
		name string
		fs   []*transport.Forward // nil: that party closes
		want string
	}{
		{"step", []*transport.Forward{fwd(0, ids, e()), fwd(1, ids, e())}, "passive party 2's message (train step 1 batch 0) is not party 1's: step 1, party 1 step 0"},
		{"ids", []*transport.Forward{fwd(0, ids, e()), fwd(0, []uint64{1, 3}, e())}, "example 1 has ID 3, party 1's 2"},
		{"phase", []*transport.Forward{fwd(0, ids, e()), {Phase: transport.Eval, IDs: ids, Embedding: e()}}, "phase eval, party 1 train"},
		{"width", []*transport.Forward{fwd(0, ids, e()), fwd(0, ids, mat(2, 2, 0, 0, 0, 0))}, "passive party 2: train step 0 batch 0: embedding of shape 2×2, want 2×1"},
		{"closed", []*transport.Forward{nil, fwd(0, ids, e())}, "passive parties [1] closed their connections while passive party 2 sent train step 0 batch 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ps, j := parties(t, Concat, []int{1, 1})
			for k, f := range tc.fs {
				if f == nil {
					ps[k].Close()
					continue
				}
				go ps[k].Exchange(context.Background(), f) //nolint:errcheck // the answer never comes
			}
			_, err := j.Recv(context.Background())
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
	for _, tc := range []struct {
		agg    Aggregation
		widths []int
		want   string
	}{
		{"mean", []int{1, 1}, `unknown aggregation "mean"`},
		{Sum, []int{2, 3}, "passive party 2's is 3, party 1's 2"},
		{Concat, []int{2}, "1 embedding widths for 2 passive parties"},
		{Concat, []int{2, 0}, "passive party 2: embedding width 0"},
	} {
		_, a := inproc.Pipe()
		_, b := inproc.Pipe()
		if _, err := Join([]transport.ActiveConn{a, b}, tc.agg, tc.widths); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Join(%s, %v) = %v, want an error containing %q", tc.agg, tc.widths, err, tc.want)
		}
	}
}

// TestJoinVerdict checks that an evaluation answer's verdict reaches
// every party and carries no gradient.
func TestJoinVerdict(t *testing.T) {
	ps, j := parties(t, Concat, []int{1, 2})
	ids := []uint64{3}
	fs := []*transport.Forward{
		{Phase: transport.Eval, Last: true, IDs: ids, Embedding: mat(1, 1, 1)},
		{Phase: transport.Eval, Last: true, IDs: ids, Embedding: mat(1, 2, 2, 3)},
	}
	answers := send(ps, fs)
	if _, err := j.Recv(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := j.Reply(context.Background(), &transport.Backward{Keep: true, Stop: true}); err != nil {
		t.Fatal(err)
	}
	for k, ch := range answers {
		if b := <-ch; b == nil || !b.Keep || !b.Stop || b.Grad != nil {
			t.Fatalf("party %d got %+v, want keep and stop without a gradient", k+1, b)
		}
	}
}
