package passive

import (
	"fmt"

	"github.com/splitguard/splitguard/internal/workset"
)

// appendState appends the CELU-VFL workset to b for a checkpoint: the
// table's position and, for each filled slot, the rows, the gradient
// received and the embedding sent, so that a resumed run's local updates
// are those of an uninterrupted one.
func (c *celu) appendState(b []byte) []byte {
	return c.table.AppendSlots(b, func(b []byte, i int) []byte {
		sl := &c.slots[i]
		b = workset.AppendInts(b, sl.rows)
		b = workset.AppendMatrix(b, sl.grad)
		return workset.AppendMatrix(b, sl.emb)
	})
}

// takeState restores what appendState wrote.
func (c *celu) takeState(b []byte) error {
	return c.table.TakeSlots(b, func(b []byte, i int) (rest []byte, err error) {
		sl := &c.slots[i]
		if sl.rows, b, err = workset.TakeInts(b, sl.rows); err != nil {
			return nil, err
		}
		if sl.grad, b, err = workset.TakeMatrix(b, sl.grad); err != nil {
			return nil, err
		}
		if sl.emb, b, err = workset.TakeMatrix(b, sl.emb); err != nil {
			return nil, err
		}
		if n := len(sl.rows); sl.grad.Rows != n || sl.emb.Rows != n || sl.grad.Cols != sl.emb.Cols {
			return nil, fmt.Errorf("a cached batch of %d rows with a %d×%d gradient and a %d×%d embedding", n, sl.grad.Rows, sl.grad.Cols, sl.emb.Rows, sl.emb.Cols)
		}
		return b, nil
	})
}
