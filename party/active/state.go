package active

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/splitguard/splitguard/protect"
)

// stateTag versions the active party's checkpoint encoding.
const stateTag = "splitguard/active/v1"

// SaveState writes what the active party needs to resume training
// bit-identically between two steps: the step count, the random stream of
// the protection, the protection's own state (protect.Stateful) and the
// top model's parameters and optimiser state, and, with error feedback,
// every training row's residual (a section the state has only then), and,
// with CELU-VFL's workset, its cached batches (likewise), and, with
// several passive parties (Config.Blocks), each party's protection's state
// and random stream, in the blocks' order. It must not be called while a
// step is in progress.
func (a *Active) SaveState(w io.Writer) error {
	rs, err := a.pcg.MarshalBinary()
	if err != nil {
		return fmt.Errorf("active: saving the random state: %w", err)
	}
	ps, err := protect.State(a.cfg.Protector)
	if err != nil {
		return fmt.Errorf("active: saving the state of protection %s: %w", a.cfg.Protector.Name(), err)
	}
	var model bytes.Buffer
	if err := a.top.Save(&model); err != nil {
		return fmt.Errorf("active: saving the top model: %w", err)
	}
	var b []byte
	b = appendBlob(b, []byte(stateTag))
	b = binary.LittleEndian.AppendUint64(b, uint64(a.step))
	b = appendBlob(b, rs)
	b = appendBlob(b, ps)
	b = appendBlob(b, model.Bytes())
	if a.feedback != nil {
		fb, err := a.feedback.MarshalBinary()
		if err != nil {
			return fmt.Errorf("active: saving the error feedback: %w", err)
		}
		b = appendBlob(b, fb)
	}
	if a.celu != nil {
		b = appendBlob(b, a.celu.appendState(nil))
	}
	a.initBlocks()
	for k, blk := range a.cfg.Blocks {
		bs, err := protect.State(blk.Protector)
		if err != nil {
			return fmt.Errorf("active: saving the state of passive party %s's protection: %w", blk.Name, err)
		}
		br, err := a.blocks[k].pcg.MarshalBinary()
		if err != nil {
			return fmt.Errorf("active: saving the random state of passive party %s's protection: %w", blk.Name, err)
		}
		b = appendBlob(appendBlob(b, bs), br)
	}
	_, err = w.Write(b)
	return err
}

// LoadState restores a state written by SaveState into an active party
// built with the same configuration. On error the party must not be used.
func (a *Active) LoadState(r io.Reader) error {
	raw, err := io.ReadAll(r)
	if err != nil {
		return fmt.Errorf("active: reading the state: %w", err)
	}
	tag, raw, err := takeBlob(raw)
	if err == nil && string(tag) != stateTag {
		err = fmt.Errorf("state of %q, want %q", tag, stateTag)
	}
	if err != nil {
		return fmt.Errorf("active: state: %w", err)
	}
	if len(raw) < 8 {
		return errors.New("active: state: truncated step")
	}
	step := int64(binary.LittleEndian.Uint64(raw))
	raw = raw[8:]
	var rs, ps, model []byte
	for _, dst := range []*[]byte{&rs, &ps, &model} {
		if *dst, raw, err = takeBlob(raw); err != nil {
			return fmt.Errorf("active: state: %w", err)
		}
	}
	var fb []byte
	if a.feedback != nil {
		if fb, raw, err = takeBlob(raw); err != nil {
			return fmt.Errorf("active: state: error feedback (a state saved without it?): %w", err)
		}
	}
	var cs []byte
	if a.celu != nil {
		if cs, raw, err = takeBlob(raw); err != nil {
			return fmt.Errorf("active: state: CELU-VFL workset (a state saved without it?): %w", err)
		}
	}
	blocks := make([][2][]byte, len(a.cfg.Blocks))
	for i, blk := range a.cfg.Blocks {
		for j := range 2 {
			if blocks[i][j], raw, err = takeBlob(raw); err != nil {
				return fmt.Errorf("active: state: passive party %s's protection (a state saved with other parties?): %w", blk.Name, err)
			}
		}
	}
	if len(raw) != 0 {
		return fmt.Errorf("active: state: %d trailing bytes (a state saved with error feedback, a CELU-VFL workset or several passive parties?)", len(raw))
	}
	if step < 0 {
		return fmt.Errorf("active: state: negative step %d", step)
	}
	if err := a.pcg.UnmarshalBinary(rs); err != nil {
		return fmt.Errorf("active: state: random stream: %w", err)
	}
	if err := protect.SetState(a.cfg.Protector, ps); err != nil {
		return fmt.Errorf("active: state: %w", err)
	}
	a.initBlocks()
	for i, blk := range a.cfg.Blocks {
		if err := protect.SetState(blk.Protector, blocks[i][0]); err != nil {
			return fmt.Errorf("active: state: passive party %s: %w", blk.Name, err)
		}
		if err := a.blocks[i].pcg.UnmarshalBinary(blocks[i][1]); err != nil {
			return fmt.Errorf("active: state: passive party %s's random stream: %w", blk.Name, err)
		}
	}
	if err := a.top.Load(bytes.NewReader(model)); err != nil {
		return fmt.Errorf("active: state: top model: %w", err)
	}
	if a.feedback != nil {
		if err := a.feedback.UnmarshalBinary(fb); err != nil {
			return fmt.Errorf("active: state: %w", err)
		}
	}
	if a.celu != nil {
		if err := a.celu.takeState(cs); err != nil {
			return fmt.Errorf("active: state: CELU-VFL workset: %w", err)
		}
	}
	a.step, a.order = step, nil
	return nil
}

// SaveModel writes the top model's parameters and optimiser state (for
// serving predictions after training).
func (a *Active) SaveModel(w io.Writer) error { return a.top.Save(w) }

func appendBlob(b, blob []byte) []byte {
	b = binary.LittleEndian.AppendUint64(b, uint64(len(blob)))
	return append(b, blob...)
}

func takeBlob(b []byte) (blob, rest []byte, err error) {
	if len(b) < 8 {
		return nil, nil, errors.New("truncated")
	}
	n := binary.LittleEndian.Uint64(b)
	if n > uint64(len(b)-8) {
		return nil, nil, fmt.Errorf("a section of %d bytes overruns the %d left", n, len(b)-8)
	}
	return b[8 : 8+n], b[8+n:], nil
}
