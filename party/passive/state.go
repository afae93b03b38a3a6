package passive

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// stateTag versions the passive party's checkpoint encoding.
const stateTag = "splitguard/passive/v1"

// SaveState writes what the passive party needs to resume training
// bit-identically between two steps: the step count, the step of the last
// evaluation and the bottom model's parameters and optimiser state, and,
// with CELU-VFL's workset, its cached batches. It must not be called while
// a step is in progress.
func (p *Passive) SaveState(w io.Writer) error {
	var model bytes.Buffer
	if err := p.bottom.Save(&model); err != nil {
		return fmt.Errorf("passive: saving the bottom model: %w", err)
	}
	var b []byte
	b = binary.LittleEndian.AppendUint64(b, uint64(len(stateTag)))
	b = append(b, stateTag...)
	b = binary.LittleEndian.AppendUint64(b, uint64(p.step))
	b = binary.LittleEndian.AppendUint64(b, uint64(p.lastEval))
	b = binary.LittleEndian.AppendUint64(b, uint64(model.Len()))
	b = append(b, model.Bytes()...)
	if p.celu != nil {
		cs := p.celu.appendState(nil)
		b = binary.LittleEndian.AppendUint64(b, uint64(len(cs)))
		b = append(b, cs...)
	}
	_, err := w.Write(b)
	return err
}

// LoadState restores a state written by SaveState into a passive party
// built with the same configuration. On error the party must not be used.
func (p *Passive) LoadState(r io.Reader) error {
	raw, err := io.ReadAll(r)
	if err != nil {
		return fmt.Errorf("passive: reading the state: %w", err)
	}
	u64 := func() uint64 {
		if len(raw) < 8 {
			err = errors.New("truncated")
			return 0
		}
		v := binary.LittleEndian.Uint64(raw)
		raw = raw[8:]
		return v
	}
	n := u64()
	if err == nil && (n != uint64(len(stateTag)) || len(raw) < int(n) || string(raw[:n]) != stateTag) {
		err = fmt.Errorf("not a %s state", stateTag)
	}
	if err != nil {
		return fmt.Errorf("passive: state: %w", err)
	}
	raw = raw[n:]
	step, lastEval, m := int64(u64()), int64(u64()), u64()
	if err == nil && (m > uint64(len(raw)) || p.celu == nil && m != uint64(len(raw))) {
		err = fmt.Errorf("model section of %d bytes, %d left (a state saved with a CELU-VFL workset?)", m, len(raw))
	}
	if err == nil && (step < 0 || lastEval < -1 || lastEval > step) {
		err = fmt.Errorf("step %d and last evaluation %d are inconsistent", step, lastEval)
	}
	if err != nil {
		return fmt.Errorf("passive: state: %w", err)
	}
	model, rest := raw[:m], raw[m:]
	if p.celu != nil {
		raw = rest
		if n := u64(); err != nil || n != uint64(len(raw)) {
			return fmt.Errorf("passive: state: the CELU-VFL workset section is missing or of another length (a state saved without it?)")
		}
		if err := p.celu.takeState(raw); err != nil {
			return fmt.Errorf("passive: state: CELU-VFL workset: %w", err)
		}
	}
	if err := p.bottom.Load(bytes.NewReader(model)); err != nil {
		return fmt.Errorf("passive: state: bottom model: %w", err)
	}
	p.step, p.lastEval, p.order = step, lastEval, nil
	return nil
}

// SaveModel writes the bottom model's parameters and optimiser state (for
// scoring new examples after training).
func (p *Passive) SaveModel(w io.Writer) error { return p.bottom.Save(w) }
