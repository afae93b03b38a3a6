package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/splitguard/splitguard/tensor"
)

// Feedback is error feedback for a lossy encoding of per-example rows
// (EF-SGD, Karimireddy et al. 2019): the sender keeps, for every
// example, the residual its last rounding left, and adds it to the next
// row it sends for the same example before rounding that:
//
//	v = x + r,   sent = Round(v),   r ← v − sent.
//
// Summed over the times an example is sent, what crossed the wire then
// differs from what the sender meant to send by the last residual only,
// instead of by every rounding's error added up; a value too small for
// the encoding (an int8 row's small coordinates, f16's underflow) is
// carried until it adds up to one the encoding holds. The residual is a
// function of what was sent and what the sender computed, never of
// anything else, and is kept by the sender: the receiver sees rounded
// rows only. The store holds one float32 per example and column.
type Feedback struct {
	enc      Encoding
	cols     int
	residual []float32 // examples × cols: row i is example i's residual
	orig     []float32 // scratch: the rows as given, restored on error
	sum      []float32 // scratch: the rows plus their residuals
}

// MaxFeedbackValues is the most residuals a Feedback keeps (8 GiB of
// float32): error feedback for more examples × columns is refused rather
// than run out of memory.
const MaxFeedbackValues = 1 << 31

// NewFeedback returns error feedback for rows of cols values sent in
// enc, for examples 0 … examples−1, with every residual zero. F32 is
// refused: it sends rows exactly and leaves no residual; so is a store of
// more than MaxFeedbackValues residuals.
func NewFeedback(enc Encoding, examples, cols int) (*Feedback, error) {
	if !enc.Valid() {
		return nil, fmt.Errorf("wire: error feedback: unknown encoding %d", uint8(enc))
	}
	if enc == F32 {
		return nil, errors.New("wire: error feedback needs a lossy encoding (f16, bf16, int8 or int4); f32 sends every value exactly")
	}
	if examples < 0 || cols <= 0 {
		return nil, fmt.Errorf("wire: error feedback for %d examples of width %d", examples, cols)
	}
	if n := float64(examples) * float64(cols); n > MaxFeedbackValues {
		return nil, fmt.Errorf("wire: error feedback for %d examples × %d columns would keep %.1f GiB of residuals, more than the %d GiB allowed", examples, cols, n*4/(1<<30), MaxFeedbackValues*4/(1<<30))
	}
	return &Feedback{enc: enc, cols: cols, residual: make([]float32, examples*cols)}, nil
}

// Encoding is the encoding f rounds to.
func (f *Feedback) Encoding() Encoding { return f.enc }

// Round adds to row j of m the residual of example rows[j], rounds m in
// place to f's encoding ([Encoding.Round]) and keeps, for each example,
// the difference between the row before and after rounding as its new
// residual. On error (a value the encoding cannot hold), m and the
// residuals are unchanged.
func (f *Feedback) Round(m *tensor.Matrix, rows []int) error {
	if m.Cols != f.cols || m.Rows != len(rows) || len(m.Data) != m.Rows*m.Cols {
		return fmt.Errorf("wire: error feedback: a %d×%d matrix for %d examples of width %d", m.Rows, m.Cols, len(rows), f.cols)
	}
	n := len(f.residual) / f.cols
	for j, r := range rows {
		if r < 0 || r >= n {
			return fmt.Errorf("wire: error feedback: row %d is example %d, outside 0…%d", j, r, n-1)
		}
	}
	f.orig = append(f.orig[:0], m.Data...)
	for j, r := range rows {
		x, e := m.Data[j*f.cols:(j+1)*f.cols], f.residual[r*f.cols:(r+1)*f.cols]
		for c := range x {
			x[c] += e[c]
		}
	}
	f.sum = append(f.sum[:0], m.Data...) // v = x + r, row by row
	if err := f.enc.Round(m); err != nil {
		copy(m.Data, f.orig)
		return fmt.Errorf("wire: error feedback: %w", err)
	}
	for j, r := range rows {
		v, sent, e := f.sum[j*f.cols:(j+1)*f.cols], m.Data[j*f.cols:(j+1)*f.cols], f.residual[r*f.cols:(r+1)*f.cols]
		for c := range e {
			e[c] = v[c] - sent[c]
		}
	}
	return nil
}

// Residual returns example i's residual, a view into f's store valid
// until the next Round.
func (f *Feedback) Residual(i int) []float32 { return f.residual[i*f.cols : (i+1)*f.cols] }

// feedbackTag versions the encoding of MarshalBinary.
const feedbackTag = "splitguard/wire/feedback/v1"

// MarshalBinary encodes the residuals (for a checkpoint): the tag, the
// encoding, the number of examples and the width, then the residuals as
// little-endian float32.
func (f *Feedback) MarshalBinary() ([]byte, error) {
	b := make([]byte, 0, len(feedbackTag)+17+4*len(f.residual))
	b = append(b, feedbackTag...)
	b = append(b, byte(f.enc))
	b = binary.LittleEndian.AppendUint64(b, uint64(len(f.residual)/f.cols))
	b = binary.LittleEndian.AppendUint64(b, uint64(f.cols))
	for _, v := range f.residual {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
	}
	return b, nil
}

// UnmarshalBinary restores residuals written by MarshalBinary into an f
// of the same encoding, examples and width; anything else is an error
// and leaves f unchanged.
func (f *Feedback) UnmarshalBinary(b []byte) error {
	h := len(feedbackTag) + 17
	if len(b) < h || string(b[:len(feedbackTag)]) != feedbackTag {
		return errors.New("wire: error feedback state: not a " + feedbackTag + " state")
	}
	enc := Encoding(b[len(feedbackTag)])
	n := binary.LittleEndian.Uint64(b[len(feedbackTag)+1:])
	cols := binary.LittleEndian.Uint64(b[len(feedbackTag)+9:])
	if want := uint64(len(f.residual) / f.cols); enc != f.enc || n != want || cols != uint64(f.cols) {
		return fmt.Errorf("wire: error feedback state of %v, %d examples × %d, want %v, %d × %d", enc, n, cols, f.enc, want, f.cols)
	}
	if len(b)-h != 4*len(f.residual) {
		return fmt.Errorf("wire: error feedback state: %d bytes of residuals, want %d", len(b)-h, 4*len(f.residual))
	}
	for i := range f.residual {
		f.residual[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[h+4*i:]))
	}
	return nil
}
