package netrun

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"path/filepath"

	"github.com/splitguard/splitguard/atomicfile"
	"github.com/splitguard/splitguard/rundir"
)

// keptModel is a party's model as it was at the evaluation the active
// party selected (select: best): the top on the active side, the bottom
// on the passive side, written at the end in place of the last one. The
// in-process run keeps the same two (run's selection).
type keptModel struct {
	step  int64
	model []byte // nil: nothing kept yet
}

// keep replaces the kept model with what save writes now, at step.
func (k *keptModel) keep(step int64, save func(io.Writer) error) error {
	var b bytes.Buffer
	if err := save(&b); err != nil {
		return fmt.Errorf("keeping the model of step %d: %w", step, err)
	}
	k.step, k.model = step, b.Bytes()
	return nil
}

// keptSection is the checkpoint section holding a kept model.
const keptSection = "kept"

// section returns the checkpoint section of k (the step, then the model),
// false when nothing is kept.
func (k *keptModel) section() (ckSection, bool) {
	if k.model == nil {
		return ckSection{}, false
	}
	b := binary.LittleEndian.AppendUint64(nil, uint64(k.step))
	return bytesSection(keptSection, append(b, k.model...)), true
}

// restore sets k from a checkpoint's sections (nothing kept without the
// section), refusing a kept model of a step after the checkpoint's.
func (k *keptModel) restore(secs map[string][]byte, step int64) error {
	k.step, k.model = 0, nil
	b, ok := secs[keptSection]
	if !ok {
		return nil
	}
	if len(b) < 8 {
		return fmt.Errorf("checkpoint of step %d: kept model section of %d bytes", step, len(b))
	}
	at := int64(binary.LittleEndian.Uint64(b))
	if at < 0 || at > step {
		return fmt.Errorf("checkpoint of step %d keeps the model of step %d", step, at)
	}
	k.step, k.model = at, bytes.Clone(b[8:])
	return nil
}

// write writes the model to keep into dir/file: the kept one, else what
// current writes (the model at the end of training).
func (k *keptModel) write(dir, file string, current func(io.Writer) error) error {
	save := current
	if k.model != nil {
		save = func(w io.Writer) error { _, err := w.Write(k.model); return err }
	}
	return atomicfile.Write(filepath.Join(dir, file), rundir.FileMode, save)
}
