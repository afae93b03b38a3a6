// Package fanin joins the connections of K passive parties into the one
// connection the active party's message loop (active.Serve) reads: each
// Recv takes one Forward from every passive party for the same message,
// checks that they agree on everything but the embedding, and combines
// the embeddings (Aggregation); each Reply splits the answer's gradient
// and answers every passive party with its own part. K = 1 is the
// passive party's connection itself, so a one-passive run is unchanged.
//
// The package holds no label: it sees embeddings and gradients only.
package fanin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/splitguard/splitguard/tensor"
	"github.com/splitguard/splitguard/transport"
)

// Aggregation is how the passive parties' embeddings are combined into
// the top model's input.
type Aggregation string

const (
	// Concat places the parties' embeddings side by side, party 1's
	// columns first: the top's input is Σ d_k wide, and each party's
	// gradient is its own column block of the gradient. The top's first
	// layer then weighs every party's columns with weights of its own:
	// a learned aggregation.
	Concat Aggregation = "concat"
	// Sum adds the parties' embeddings (all of one width d): the top's
	// input is d wide and every party receives the same gradient.
	Sum Aggregation = "sum"
	// Gated joins the embeddings as Concat does (each party its own
	// column block of the gradient); the active party's top then weighs
	// the parties' blocks, all of one width, with weights it learns
	// (config.GatedTop), so each party's block of the gradient is its
	// weight times the gradient of the top's input.
	Gated Aggregation = "gated"
)

// Check returns an error for an aggregation that is not known.
func (a Aggregation) Check() error {
	switch a {
	case Concat, Sum, Gated:
		return nil
	}
	return fmt.Errorf("fanin: unknown aggregation %q (want %s, %s or %s)", string(a), Concat, Sum, Gated)
}

// Width is the width of the combined embedding for parties of widths w.
func (a Aggregation) Width(w []int) int {
	if a == Sum {
		if len(w) == 0 {
			return 0
		}
		return w[0]
	}
	s := 0
	for _, x := range w {
		s += x
	}
	return s
}

// Blocks returns the column range [lo, hi) of each party's block of the
// combined gradient under a: consecutive blocks for Concat, the whole
// width for every party under Sum.
func (a Aggregation) Blocks(w []int) [][2]int {
	out := make([][2]int, len(w))
	lo := 0
	for k, x := range w {
		if a == Sum {
			out[k] = [2]int{0, x}
			continue
		}
		out[k] = [2]int{lo, lo + x}
		lo += x
	}
	return out
}

// Conn is the joined connection of K passive parties. It is an
// transport.ActiveConn for one message loop; it is not safe for
// concurrent use.
type Conn struct {
	conns  []transport.ActiveConn
	agg    Aggregation
	widths []int
	blocks [][2]int

	got    []*transport.Forward // this message's Forward from each party
	joined transport.Forward
	emb    *tensor.Matrix
	grads  []*tensor.Matrix // each party's gradient block, reused
	closed []bool
	open   bool // a joined message waits for its Reply
}

// Join returns the connection that joins conns, the passive parties in
// their order (party 1 first), whose embeddings are widths[k] wide,
// combined by agg. With one connection it returns that connection.
func Join(conns []transport.ActiveConn, agg Aggregation, widths []int) (transport.ActiveConn, error) {
	if err := agg.Check(); err != nil {
		return nil, err
	}
	if len(conns) == 0 {
		return nil, errors.New("fanin: no passive party")
	}
	if len(widths) != len(conns) {
		return nil, fmt.Errorf("fanin: %d embedding widths for %d passive parties", len(widths), len(conns))
	}
	for k, w := range widths {
		if w <= 0 {
			return nil, fmt.Errorf("fanin: passive party %d: embedding width %d", k+1, w)
		}
		if (agg == Sum || agg == Gated) && w != widths[0] {
			return nil, fmt.Errorf("fanin: aggregation %s adds embeddings of one width; passive party %d's is %d, party 1's %d", agg, k+1, w, widths[0])
		}
	}
	if len(conns) == 1 {
		return conns[0], nil
	}
	return &Conn{conns: conns, agg: agg, widths: slices.Clone(widths), blocks: agg.Blocks(widths),
		got: make([]*transport.Forward, len(conns)), emb: &tensor.Matrix{},
		grads: make([]*tensor.Matrix, len(conns)), closed: make([]bool, len(conns))}, nil
}

// Recv receives the next message from every passive party, in party
// order, and returns their combination. It returns io.EOF once every
// party has closed its connection; a party that closes while another
// still sends, or whose message differs from party 1's in anything but
// the embedding, is an error naming the party.
func (c *Conn) Recv(ctx context.Context) (*transport.Forward, error) {
	if c.open {
		return nil, errors.New("fanin: a message was received while the previous one is unanswered")
	}
	eof := 0
	for k, conn := range c.conns {
		if c.closed[k] {
			eof++
			continue
		}
		f, err := conn.Recv(ctx)
		if errors.Is(err, io.EOF) {
			c.closed[k] = true
			eof++
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("fanin: passive party %d: %w", k+1, err)
		}
		c.got[k] = f
	}
	switch {
	case eof == len(c.conns):
		return nil, io.EOF
	case eof > 0:
		return nil, c.closedWhileSending()
	}
	if err := c.agree(); err != nil {
		return nil, err
	}
	c.combine()
	c.open = true
	return &c.joined, nil
}

// closedWhileSending names the parties that closed and one that sent.
func (c *Conn) closedWhileSending() error {
	var gone []int
	sent := 0
	for k, done := range c.closed {
		if done {
			gone = append(gone, k+1)
		} else if sent == 0 {
			sent = k + 1
		}
	}
	f := c.got[sent-1]
	return fmt.Errorf("fanin: passive parties %v closed their connections while passive party %d sent %v step %d batch %d", gone, sent, f.Phase, f.Step, f.Batch)
}

// agree checks that every party's message is the same message as party
// 1's, with an embedding of its width.
func (c *Conn) agree() error {
	ref := c.got[0]
	for k, f := range c.got {
		if f.Embedding == nil || f.Embedding.Rows != len(f.IDs) || f.Embedding.Cols != c.widths[k] {
			return fmt.Errorf("fanin: passive party %d: %v step %d batch %d: embedding of shape %s, want %d×%d", k+1, f.Phase, f.Step, f.Batch, shape(f.Embedding), len(f.IDs), c.widths[k])
		}
		if k == 0 {
			continue
		}
		var what string
		switch {
		case f.Phase != ref.Phase:
			what = fmt.Sprintf("phase %v, party 1 %v", f.Phase, ref.Phase)
		case f.Step != ref.Step:
			what = fmt.Sprintf("step %d, party 1 step %d", f.Step, ref.Step)
		case f.Epoch != ref.Epoch:
			what = fmt.Sprintf("epoch %d, party 1 epoch %d", f.Epoch, ref.Epoch)
		case f.Batch != ref.Batch:
			what = fmt.Sprintf("batch %d, party 1 batch %d", f.Batch, ref.Batch)
		case f.Last != ref.Last:
			what = fmt.Sprintf("last %v, party 1 last %v", f.Last, ref.Last)
		case len(f.IDs) != len(ref.IDs):
			what = fmt.Sprintf("%d example IDs, party 1 %d", len(f.IDs), len(ref.IDs))
		default:
			for i, id := range f.IDs {
				if id != ref.IDs[i] {
					what = fmt.Sprintf("example %d has ID %d, party 1's %d", i, id, ref.IDs[i])
					break
				}
			}
		}
		if what != "" {
			return fmt.Errorf("fanin: passive party %d's message (%v step %d batch %d) is not party 1's: %s", k+1, f.Phase, f.Step, f.Batch, what)
		}
	}
	return nil
}

// combine writes the joined message: party 1's fields and the combined
// embedding.
func (c *Conn) combine() {
	ref := c.got[0]
	n, width := len(ref.IDs), c.agg.Width(c.widths)
	c.emb = c.emb.Resize(n, width)
	out := c.emb.Data
	if c.agg == Sum {
		copy(out, ref.Embedding.Data[:n*width])
		for _, f := range c.got[1:] {
			for i, v := range f.Embedding.Data[:n*width] {
				out[i] += v
			}
		}
	} else {
		for k, f := range c.got {
			lo, hi := c.blocks[k][0], c.blocks[k][1]
			w := hi - lo
			for r := range n {
				copy(out[r*width+lo:r*width+hi], f.Embedding.Data[r*w:(r+1)*w])
			}
		}
	}
	c.joined = transport.Forward{Phase: ref.Phase, Step: ref.Step, Epoch: ref.Epoch, Batch: ref.Batch, Last: ref.Last,
		IDs: ref.IDs, Embedding: c.emb}
}

// Reply answers every passive party: a Train answer's gradient is split
// into each party's block (Concat) or sent whole to each (Sum); the
// verdict bits go to all.
func (c *Conn) Reply(ctx context.Context, b *transport.Backward) error {
	if !c.open {
		return errors.New("fanin: no received message is unanswered")
	}
	if b == nil {
		return errors.New("fanin: nil answer")
	}
	width := c.agg.Width(c.widths)
	if b.Grad != nil && (b.Grad.Cols != width || len(b.Grad.Data) != b.Grad.Rows*b.Grad.Cols) {
		return fmt.Errorf("fanin: step %d batch %d: gradient of shape %s, the joined embedding is %d wide", b.Step, b.Batch, shape(b.Grad), width)
	}
	for k, conn := range c.conns {
		ans := *b
		if b.Grad != nil {
			ans.Grad = c.block(k, b.Grad)
		}
		if err := conn.Reply(ctx, &ans); err != nil {
			return fmt.Errorf("fanin: passive party %d: %w", k+1, err)
		}
	}
	c.open = false
	return nil
}

// block returns party k's columns of g, in a buffer of its own.
func (c *Conn) block(k int, g *tensor.Matrix) *tensor.Matrix {
	lo, hi := c.blocks[k][0], c.blocks[k][1]
	w := hi - lo
	c.grads[k] = c.grads[k].Resize(g.Rows, w)
	out := c.grads[k].Data
	for r := range g.Rows {
		copy(out[r*w:(r+1)*w], g.Data[r*g.Cols+lo:r*g.Cols+hi])
	}
	return c.grads[k]
}

func shape(m *tensor.Matrix) string {
	if m == nil {
		return "no matrix"
	}
	return fmt.Sprintf("%d×%d", m.Rows, m.Cols)
}
