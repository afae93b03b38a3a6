package protect

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"sort"
)

// Stateful is implemented by protectors that carry state from one batch to
// the next (Marvell's and max_norm_label's last valid noise parameters,
// used on batches of one class). A checkpoint saves that state with
// MarshalBinary and a restarted party restores it with UnmarshalBinary into
// a protector built with the same options, after which it perturbs
// bit-identically to one that never stopped. Protectors without state do
// not implement it.
type Stateful interface {
	MarshalBinary() ([]byte, error)
	UnmarshalBinary(data []byte) error
}

// State returns p's state for a checkpoint, or nil when p keeps none.
func State(p Protector) ([]byte, error) {
	if s, ok := p.(Stateful); ok {
		return s.MarshalBinary()
	}
	return nil, nil
}

// SetState restores a state returned by State into p (built with the same
// name and options). A nil or empty state is accepted only by a protector
// without state.
func SetState(p Protector, state []byte) error {
	s, ok := p.(Stateful)
	if !ok {
		if len(state) != 0 {
			return fmt.Errorf("protect: %s keeps no state, but the checkpoint holds %d bytes for it", p.Name(), len(state))
		}
		return nil
	}
	return s.UnmarshalBinary(state)
}

// Version tags of the state encodings.
const (
	marvellStateTag      = "marvell/v1"
	maxNormLabelStateTag = "max_norm_label/v1"
)

// stateWriter and stateReader encode the little-endian state formats.
type stateWriter struct{ b []byte }

func (w *stateWriter) str(s string) {
	w.b = binary.LittleEndian.AppendUint32(w.b, uint32(len(s)))
	w.b = append(w.b, s...)
}
func (w *stateWriter) f64(v float64) {
	w.b = binary.LittleEndian.AppendUint64(w.b, math.Float64bits(v))
}
func (w *stateWriter) u32(v int)    { w.b = binary.LittleEndian.AppendUint32(w.b, uint32(v)) }
func (w *stateWriter) u64(v uint64) { w.b = binary.LittleEndian.AppendUint64(w.b, v) }
func (w *stateWriter) f32(v float32) {
	w.b = binary.LittleEndian.AppendUint32(w.b, math.Float32bits(v))
}
func (w *stateWriter) flag(v bool) {
	if v {
		w.b = append(w.b, 1)
	} else {
		w.b = append(w.b, 0)
	}
}

type stateReader struct {
	b    []byte
	what string
	err  error
}

var errShortState = errors.New("truncated")

func (r *stateReader) take(n int) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || len(r.b) < n {
		r.err = errShortState
		return nil
	}
	out := r.b[:n]
	r.b = r.b[n:]
	return out
}
func (r *stateReader) u32() int {
	b := r.take(4)
	if b == nil {
		return 0
	}
	return int(binary.LittleEndian.Uint32(b))
}
func (r *stateReader) str() string { return string(r.take(r.u32())) }
func (r *stateReader) u64() uint64 {
	b := r.take(8)
	if b == nil {
		return 0
	}
	return binary.LittleEndian.Uint64(b)
}
func (r *stateReader) f32() float32 {
	b := r.take(4)
	if b == nil {
		return 0
	}
	return math.Float32frombits(binary.LittleEndian.Uint32(b))
}
func (r *stateReader) f64() float64 {
	b := r.take(8)
	if b == nil {
		return 0
	}
	return math.Float64frombits(binary.LittleEndian.Uint64(b))
}
func (r *stateReader) flag() bool {
	b := r.take(1)
	if b == nil {
		return false
	}
	if b[0] > 1 {
		r.err = fmt.Errorf("flag byte %d", b[0])
	}
	return b[0] == 1
}
func (r *stateReader) tag(want string) {
	if got := r.str(); r.err == nil && got != want {
		r.err = fmt.Errorf("state of %q, want %q", got, want)
	}
}
func (r *stateReader) done() error {
	if r.err == nil && len(r.b) != 0 {
		r.err = fmt.Errorf("%d trailing bytes", len(r.b))
	}
	if r.err != nil {
		return fmt.Errorf("protect: %s state: %w", r.what, r.err)
	}
	return nil
}

func writeStats(w *stateWriter, s Stats) {
	keys := make([]string, 0, len(s))
	for k := range s {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	w.u32(len(keys))
	for _, k := range keys {
		w.str(k)
		w.f64(s[k])
	}
}

func readStats(r *stateReader) Stats {
	n := r.u32()
	if n > len(r.b) {
		r.err = errShortState
		return nil
	}
	s := make(Stats, n)
	for range n {
		k := r.str()
		s[k] = r.f64()
	}
	return s
}

// saveStream writes a layer's state that is only its random stream: the
// tag, then the PCG's state.
func saveStream(w io.Writer, tag string, pcg *rand.PCG) error {
	rs, err := pcg.MarshalBinary()
	if err != nil {
		return err
	}
	sw := &stateWriter{}
	sw.str(tag)
	sw.str(string(rs))
	_, err = w.Write(sw.b)
	return err
}

// loadStream restores what saveStream wrote into pcg; what names the
// layer in errors.
func loadStream(r io.Reader, tag, what string, pcg *rand.PCG) error {
	sr, err := readState(r, tag, what)
	if err != nil {
		return err
	}
	rs := sr.str()
	if err := sr.done(); err != nil {
		return err
	}
	if err := pcg.UnmarshalBinary([]byte(rs)); err != nil {
		return fmt.Errorf("protect: %s state: random stream: %w", what, err)
	}
	return nil
}

// readState reads all of r, a layer's state that Save wrote, and returns a
// reader over it past its tag; what names the layer in errors.
func readState(r io.Reader, tag, what string) (*stateReader, error) {
	raw, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("protect: %s state: %w", what, err)
	}
	sr := &stateReader{b: raw, what: what}
	sr.tag(tag)
	return sr, nil
}
