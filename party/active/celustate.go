package active

import (
	"fmt"

	"github.com/splitguard/splitguard/internal/workset"
)

// appendState appends the CELU-VFL workset to b for a checkpoint: the
// table's position and, for each filled slot, the embedding received, the
// clean gradient sent, the rows and their targets, so that a resumed run's
// local updates are those of an uninterrupted one.
func (c *celu) appendState(b []byte) []byte {
	return c.table.AppendSlots(b, func(b []byte, i int) []byte {
		sl := &c.slots[i]
		b = workset.AppendMatrix(b, sl.emb)
		b = workset.AppendMatrix(b, sl.grad)
		b = workset.AppendInts(b, sl.rows)
		return workset.AppendFloats(b, sl.raw)
	})
}

// takeState restores what appendState wrote.
func (c *celu) takeState(b []byte) error {
	return c.table.TakeSlots(b, func(b []byte, i int) (rest []byte, err error) {
		sl := &c.slots[i]
		if sl.emb, b, err = workset.TakeMatrix(b, sl.emb); err != nil {
			return nil, err
		}
		if sl.grad, b, err = workset.TakeMatrix(b, sl.grad); err != nil {
			return nil, err
		}
		if sl.rows, b, err = workset.TakeInts(b, sl.rows); err != nil {
			return nil, err
		}
		if sl.raw, b, err = workset.TakeFloats(b, sl.raw); err != nil {
			return nil, err
		}
		n := len(sl.rows)
		if sl.emb.Rows != n || sl.grad.Rows != n || len(sl.raw) != n || sl.grad.Cols != sl.emb.Cols {
			return nil, fmt.Errorf("a cached batch of %d rows with a %d×%d embedding, a %d×%d gradient and %d targets", n, sl.emb.Rows, sl.emb.Cols, sl.grad.Rows, sl.grad.Cols, len(sl.raw))
		}
		return b, nil
	})
}
