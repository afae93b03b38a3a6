package run

import (
	"context"
	"math"
	"testing"

	"github.com/splitguard/splitguard/config"
	"github.com/splitguard/splitguard/data"
	"github.com/splitguard/splitguard/model"
	"github.com/splitguard/splitguard/party/active"
	"github.com/splitguard/splitguard/protect"
	"github.com/splitguard/splitguard/schedule"
	"github.com/splitguard/splitguard/tensor"
	"github.com/splitguard/splitguard/transport"
	"github.com/splitguard/splitguard/transport/fanin"
	"github.com/splitguard/splitguard/transport/inproc"
)

// partyGradients sends the passive parties' embeddings embs (4 rows
// each) through fanin.Join under agg to an active party with top, and
// returns each party's answer with the batch's labels y; blocks are the
// parties' columns of the joined embedding.
func partyGradients(t *testing.T, top model.Top, agg fanin.Aggregation, embs []*tensor.Matrix, blocks [][2]int) ([]*transport.Backward, []float64) {
	t.Helper()
	train := &data.Dataset{IDs: []uint64{10, 11, 12, 13}, Labels: []uint8{1, 0, 0, 1}}
	test := &data.Dataset{IDs: []uint64{20, 21}, Labels: []uint8{0, 1}}
	sched, err := schedule.New(4, 4, 1)
	if err != nil {
		t.Fatal(err)
	}
	none, err := protect.Build("none", nil, 1)
	if err != nil {
		t.Fatal(err)
	}
	var bl []active.Block
	widths := make([]int, len(embs))
	for k, b := range blocks {
		bl = append(bl, active.Block{Name: string(rune('a' + k)), Lo: b[0], Hi: b[1], Protector: none.Protector})
		widths[k] = embs[k].Cols
	}
	act, err := active.New(top, train, test, sched, blocks[len(blocks)-1][1], active.Config{Protector: none.Protector, Blocks: bl})
	if err != nil {
		t.Fatal(err)
	}
	rows := sched.Rows(sched.Order(0, nil), 0)
	ids := make([]uint64, len(rows))
	y := make([]float64, len(rows))
	for i, r := range rows {
		ids[i], y[i] = train.IDs[r], float64(train.Labels[r])
	}
	var pConns []transport.PassiveConn
	var aConns []transport.ActiveConn
	for range embs {
		p, a := inproc.Pipe()
		pConns, aConns = append(pConns, p), append(aConns, a)
	}
	joined, err := fanin.Join(aConns, agg, widths)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go act.Serve(ctx, joined) //nolint:errcheck // ended by cancel
	got := make([]chan *transport.Backward, len(embs))
	for k, e := range embs {
		got[k] = make(chan *transport.Backward, 1)
		go func() {
			b, err := pConns[k].Exchange(ctx, &transport.Forward{Phase: transport.Train, IDs: ids, Embedding: e})
			if err != nil {
				t.Error(err)
			}
			got[k] <- b
		}()
	}
	out := make([]*transport.Backward, len(embs))
	for k := range embs {
		if out[k] = <-got[k]; out[k] == nil {
			t.Fatalf("party %d got no answer", k+1)
		}
	}
	return out, y
}

// bce is the mean binary cross-entropy of logits against y.
func bce(logits []float32, y []float64) float64 {
	s := 0.0
	for i, z := range logits {
		p := 1 / (1 + math.Exp(-float64(z)))
		s -= y[i]*math.Log(p) + (1-y[i])*math.Log(1-p)
	}
	return s / float64(len(logits))
}

// checkBlocksFD compares every party's gradient block with the central
// finite differences of loss at the joined embedding (4 rows).
func checkBlocksFD(t *testing.T, got []*transport.Backward, joined *tensor.Matrix, blocks [][2]int, loss func(*tensor.Matrix) float64) {
	t.Helper()
	const h = 1e-3
	n := joined.Cols
	for k, blk := range blocks {
		b := got[k]
		w := blk[1] - blk[0]
		if b.Grad.Rows != 4 || b.Grad.Cols != w {
			t.Fatalf("party %d's gradient is %d×%d, want 4×%d", k+1, b.Grad.Rows, b.Grad.Cols, w)
		}
		for r := range 4 {
			for c := blk[0]; c < blk[1]; c++ {
				e := joined.Clone()
				e.Data[r*n+c] += h
				up := loss(e)
				e.Data[r*n+c] -= 2 * h
				fd := (up - loss(e)) / (2 * h)
				if g := float64(b.Grad.Data[r*w+c-blk[0]]); math.Abs(g-fd) > 2e-4 {
					t.Errorf("party %d row %d column %d: gradient %.6f, finite difference %.6f", k+1, r, c-blk[0], g, fd)
				}
			}
		}
	}
}

// TestPartyGradientBlocksMatchFiniteDifferences sends two passive
// parties' embeddings (2 and 1 columns) through fanin.Join to an active
// party with a small top (3 → 5 ReLU → logit) and checks that each party
// receives the central finite differences of the mean BCE with respect
// to its own columns, computed on a copy of the top.
func TestPartyGradientBlocksMatchFiniteDifferences(t *testing.T) {
	mc := model.Config{Widths: []int{3, 5}, Cut: 1, EmbDim: 1, L2: -1, LR: 1e-3, EmbInit: 0.05, Seed: 7}
	top, err := model.NewTop(mc, nil)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := model.NewTop(mc, nil)
	if err != nil {
		t.Fatal(err)
	}
	embs := []*tensor.Matrix{
		{Rows: 4, Cols: 2, Data: []float32{0.3, -0.2, 0.8, 0.1, -0.5, 0.4, 0.2, 0.9}},
		{Rows: 4, Cols: 1, Data: []float32{0.7, -0.3, 0.25, -0.6}},
	}
	blocks := [][2]int{{0, 2}, {2, 3}}
	got, y := partyGradients(t, top, fanin.Concat, embs, blocks)
	checkBlocksFD(t, got, tensor.SideBySide(nil, embs...), blocks, func(e *tensor.Matrix) float64 {
		logits, err := ref.Forward(e, nil)
		if err != nil {
			t.Fatal(err)
		}
		return bce(logits, y)
	})
}

// TestGatedPartyGradientsMatchFiniteDifferences is the same check under
// aggregation gated: two parties of width 2 behind the learned weights
// α = softmax(θ), θ = (0.9, −0.4); the finite differences are taken on a
// copy of the inner top fed α₁e₁ + α₂e₂ with α computed here, so each
// party's gradient must be α_k times the top's input gradient.
func TestGatedPartyGradientsMatchFiniteDifferences(t *testing.T) {
	mc := model.Config{Widths: []int{2, 5}, Cut: 1, EmbDim: 1, L2: -1, LR: 1e-3, EmbInit: 0.05, Seed: 7}
	inner, err := model.NewTop(mc, nil)
	if err != nil {
		t.Fatal(err)
	}
	top, err := config.NewGatedTop(inner, 2, 2, 1e-3)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := model.NewTop(mc, nil)
	if err != nil {
		t.Fatal(err)
	}
	theta := []float64{0.9, -0.4}
	for k, v := range theta {
		top.Gate.Params()[0].W.Data[k] = float32(v)
	}
	// α = softmax(θ), computed here.
	z := math.Exp(theta[0]) + math.Exp(theta[1])
	alpha := []float64{math.Exp(theta[0]) / z, math.Exp(theta[1]) / z}
	embs := []*tensor.Matrix{
		{Rows: 4, Cols: 2, Data: []float32{0.3, -0.2, 0.8, 0.1, -0.5, 0.4, 0.2, 0.9}},
		{Rows: 4, Cols: 2, Data: []float32{0.7, -0.3, 0.25, -0.6, 0.1, 0.5, -0.8, 0.35}},
	}
	blocks := [][2]int{{0, 2}, {2, 4}}
	got, y := partyGradients(t, top, fanin.Gated, embs, blocks)
	checkBlocksFD(t, got, tensor.SideBySide(nil, embs...), blocks, func(e *tensor.Matrix) float64 {
		in := tensor.New(4, 2)
		for r := range 4 {
			for c := range 2 {
				in.Data[r*2+c] = float32(alpha[0]*float64(e.Data[r*4+c]) + alpha[1]*float64(e.Data[r*4+2+c]))
			}
		}
		logits, err := ref.Forward(in, nil)
		if err != nil {
			t.Fatal(err)
		}
		return bce(logits, y)
	})
}
