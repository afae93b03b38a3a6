package passive

import (
	"context"
	"testing"

	"github.com/splitguard/splitguard/data"
	"github.com/splitguard/splitguard/model"
	"github.com/splitguard/splitguard/schedule"
	"github.com/splitguard/splitguard/tensor"
	"github.com/splitguard/splitguard/transport"
)

// fixedConn answers every training message with the same gradient,
// allocating nothing.
type fixedConn struct{ bw transport.Backward }

func (c *fixedConn) Exchange(_ context.Context, f *transport.Forward) (*transport.Backward, error) {
	c.bw.Step, c.bw.Batch = f.Step, f.Batch
	return &c.bw, nil
}

func (c *fixedConn) Close() error { return nil }

// BenchmarkTrainStep times the passive party's training step (the batch's
// features, the bottom's forward and backward, the exchange with an
// active party that answers at once) on batches of 256 rows of 13
// numeric columns with a 16-wide cut, and reports its allocations.
func BenchmarkTrainStep(b *testing.B) {
	const rows, batch, cols, cut = 2048, 256, 13, 16
	f := &data.Features{Rows: rows, NumDense: cols, Dense: make([]float32, rows*cols)}
	ids := make([]uint64, rows)
	for i := range rows {
		ids[i] = uint64(i)
		for j := range cols {
			f.Dense[i*cols+j] = float32((i*7+j*3)%11) * 0.1
		}
	}
	bottom, err := model.NewBottom(model.Config{Widths: []int{32, cut}, Cut: 2, LR: 1e-3, Seed: 1}, model.SchemaOf(f))
	if err != nil {
		b.Fatal(err)
	}
	sched, err := schedule.New(rows, batch, 1)
	if err != nil {
		b.Fatal(err)
	}
	p, err := New(bottom, Split{IDs: ids, X: f}, Split{}, sched, Config{Epochs: 1 << 20})
	if err != nil {
		b.Fatal(err)
	}
	conn := &fixedConn{bw: transport.Backward{Grad: tensor.New(batch, cut)}}
	for i := range conn.bw.Grad.Data {
		conn.bw.Grad.Data[i] = float32(i%5) * 0.01
	}
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if err := p.trainStep(ctx, conn); err != nil {
			b.Fatal(err)
		}
	}
}
