package active

import (
	"testing"

	"github.com/splitguard/splitguard/data"
	"github.com/splitguard/splitguard/model"
	"github.com/splitguard/splitguard/protect"
	"github.com/splitguard/splitguard/schedule"
	"github.com/splitguard/splitguard/tensor"
	"github.com/splitguard/splitguard/transport"
)

// BenchmarkTrainStep times the active party's training step (top forward
// and backward, the loss, Marvell's protection, the optimiser step) on a
// batch of 256 rows with a 16-wide cut, and reports its allocations.
func BenchmarkTrainStep(b *testing.B) {
	const rows, batch, cut = 2048, 256, 16
	d := &data.Dataset{X: &data.Features{Rows: rows, NumDense: 1, Dense: make([]float32, rows)}}
	for i := range rows {
		d.IDs = append(d.IDs, uint64(100+i))
		d.Labels = append(d.Labels, uint8(i%3/2))
	}
	top, err := model.NewTop(model.Config{Widths: []int{cut, 32}, Cut: 1, EmbDim: 2, LR: 1e-3, Seed: 1}, nil)
	if err != nil {
		b.Fatal(err)
	}
	sched, err := schedule.New(rows, batch, 7)
	if err != nil {
		b.Fatal(err)
	}
	prot, err := protect.New("marvell", protect.Params{"marvell_s": 4})
	if err != nil {
		b.Fatal(err)
	}
	a, err := New(top, d, d, sched, cut, Config{Protector: prot, Seed: 5})
	if err != nil {
		b.Fatal(err)
	}
	msgs := make([]*transport.Forward, b.N)
	var order []int
	for s := range msgs {
		epoch, bt := sched.Position(int64(s))
		if bt == 0 || order == nil {
			order = sched.Order(epoch, order)
		}
		f := &transport.Forward{Phase: transport.Train, Step: int64(s), Epoch: epoch, Batch: bt, Embedding: tensor.New(batch, cut)}
		for i, r := range sched.Rows(order, bt) {
			f.IDs = append(f.IDs, d.IDs[r])
			for j := range cut {
				f.Embedding.Data[cut*i+j] = float32((i*7+j*3)%11) * 0.05
			}
		}
		msgs[s] = f
	}
	b.ReportAllocs()
	b.ResetTimer()
	for _, f := range msgs {
		if _, err := a.TrainStep(f); err != nil {
			b.Fatal(err)
		}
	}
}
