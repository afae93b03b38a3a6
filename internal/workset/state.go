package workset

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/splitguard/splitguard/tensor"
)

// tableStateLen is the length of a Table's encoding: slots, batches added
// and local updates drawn, eight bytes each.
const tableStateLen = 24

// AppendState appends the table's position (its slots, the batches added
// and the local updates drawn) to b, for a checkpoint: a resumed run draws
// the same slots as an uninterrupted one.
func (t *Table) AppendState(b []byte) []byte {
	b = binary.LittleEndian.AppendUint64(b, uint64(t.w))
	b = binary.LittleEndian.AppendUint64(b, uint64(t.n))
	return binary.LittleEndian.AppendUint64(b, uint64(t.next))
}

// TakeState restores the position AppendState wrote at the start of b
// into t and returns the rest of b. A table of another size, or a
// position no run reaches, is refused and t is left as it was.
func (t *Table) TakeState(b []byte) ([]byte, error) {
	if len(b) < tableStateLen {
		return nil, errors.New("workset: truncated table state")
	}
	w := binary.LittleEndian.Uint64(b)
	n := int64(binary.LittleEndian.Uint64(b[8:]))
	next := int64(binary.LittleEndian.Uint64(b[16:]))
	switch {
	case w != uint64(t.w):
		return nil, fmt.Errorf("workset: a table of %d slots, this one has %d", w, t.w)
	case n < 0 || next < 0 || (n == 0 && next != 0):
		return nil, fmt.Errorf("workset: table state of %d batches added and %d local updates drawn is inconsistent", n, next)
	}
	t.n, t.next = n, next
	return b[tableStateLen:], nil
}

// Filled is the number of slots that hold a batch: min(batches added, W).
func (t *Table) Filled() int { return int(min(t.n, int64(t.w))) }

// AppendInts appends v (its length, then each value) to b.
func AppendInts(b []byte, v []int) []byte {
	b = binary.LittleEndian.AppendUint64(b, uint64(len(v)))
	for _, x := range v {
		b = binary.LittleEndian.AppendUint64(b, uint64(int64(x)))
	}
	return b
}

// TakeInts reads what AppendInts wrote at the start of b into dst[:0]
// and returns it with the rest of b.
func TakeInts(b []byte, dst []int) ([]int, []byte, error) {
	n, b, err := takeLen(b, 8)
	if err != nil {
		return nil, nil, err
	}
	dst = dst[:0]
	for i := range n {
		dst = append(dst, int(int64(binary.LittleEndian.Uint64(b[8*i:]))))
	}
	return dst, b[8*n:], nil
}

// AppendFloats appends v (its length, then each value's bits) to b.
func AppendFloats(b []byte, v []float32) []byte {
	b = binary.LittleEndian.AppendUint64(b, uint64(len(v)))
	for _, x := range v {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(x))
	}
	return b
}

// TakeFloats reads what AppendFloats wrote at the start of b into dst[:0]
// and returns it with the rest of b.
func TakeFloats(b []byte, dst []float32) ([]float32, []byte, error) {
	n, b, err := takeLen(b, 4)
	if err != nil {
		return nil, nil, err
	}
	dst = dst[:0]
	for i := range n {
		dst = append(dst, math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:])))
	}
	return dst, b[4*n:], nil
}

// takeLen reads a length of items of size bytes each and checks that b
// holds them.
func takeLen(b []byte, size int) (int, []byte, error) {
	if len(b) < 8 {
		return 0, nil, errors.New("workset: truncated state")
	}
	n := binary.LittleEndian.Uint64(b)
	b = b[8:]
	if n > uint64(len(b)/size) {
		return 0, nil, fmt.Errorf("workset: a section of %d values overruns the %d bytes left", n, len(b))
	}
	return int(n), b, nil
}

// AppendMatrix appends m's shape and values to b.
func AppendMatrix(b []byte, m *tensor.Matrix) []byte {
	b = AppendInts(b, []int{m.Rows, m.Cols})
	return AppendFloats(b, m.Data)
}

// TakeMatrix reads what AppendMatrix wrote at the start of b into m
// (allocated when nil) and returns it with the rest of b; the values are
// read before the shape is trusted, so a corrupt shape allocates nothing.
func TakeMatrix(b []byte, m *tensor.Matrix) (*tensor.Matrix, []byte, error) {
	shape, b, err := TakeInts(b, nil)
	if err != nil {
		return nil, nil, err
	}
	if m == nil {
		m = &tensor.Matrix{}
	}
	var data []float32
	if data, b, err = TakeFloats(b, m.Data[:0]); err != nil {
		return nil, nil, err
	}
	if len(shape) != 2 || shape[0] < 0 || shape[1] < 0 || (shape[1] == 0 && len(data) != 0) ||
		(shape[1] > 0 && (len(data)%shape[1] != 0 || len(data)/shape[1] != shape[0])) {
		return nil, nil, fmt.Errorf("workset: a matrix of shape %v with %d values", shape, len(data))
	}
	m.Data, m.Rows, m.Cols = data, shape[0], shape[1]
	return m, b, nil
}

// AppendSlots appends the table's position and then, for each filled
// slot i, what slot(b, i) appends: a party's cached batches, for a
// checkpoint.
func (t *Table) AppendSlots(b []byte, slot func(b []byte, i int) []byte) []byte {
	b = t.AppendState(b)
	for i := range t.Filled() {
		b = slot(b, i)
	}
	return b
}

// TakeSlots restores what AppendSlots wrote: the position into t, then
// each filled slot through slot, which reads its own section and returns
// the rest. The whole of b must be used.
func (t *Table) TakeSlots(b []byte, slot func(b []byte, i int) ([]byte, error)) error {
	b, err := t.TakeState(b)
	if err != nil {
		return err
	}
	for i := range t.Filled() {
		if b, err = slot(b, i); err != nil {
			return fmt.Errorf("workset slot %d: %w", i, err)
		}
	}
	if len(b) != 0 {
		return fmt.Errorf("workset: %d trailing bytes", len(b))
	}
	return nil
}
