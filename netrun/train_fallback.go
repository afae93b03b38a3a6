package netrun

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/splitguard/splitguard/atomicfile"
	"github.com/splitguard/splitguard/rundir"
)

// fallback decides whether a resume at step, below the acknowledged step,
// may go ahead, and returns its record: only when one party's copy of the
// acknowledged checkpoint is lost (the active's does not verify, or the
// passive does not list it among holds, the checkpoints it holds intact),
// and only to the newest step both hold intact below it, which must be the
// active's newest checkpoint below it (or step 0 when the acknowledged
// checkpoint is the run's first): never more than one checkpoint back.
// holds comes from the session's owner; an impostor holding the passive's
// certificate can move the run back by one checkpoint, which replays the
// same steps, and no further.
func (r *activeRun) fallback(step int64, holds []int64) (*rundir.CheckpointFallback, error) {
	steps, err := r.store.steps()
	if err != nil {
		return nil, err
	}
	prev := int64(0)
	for _, s := range steps {
		if s < r.acked {
			prev = s
		}
	}
	if prev == 0 && r.cfg.CheckpointEvery > 0 && r.acked > int64(r.cfg.CheckpointEvery) {
		return nil, fmt.Errorf("this party holds no checkpoint below step %d", r.acked)
	}
	if step != prev {
		return nil, fmt.Errorf("the newest checkpoint below it is step %d", prev)
	}
	if step > 0 && !slices.Contains(holds, step) {
		return nil, fmt.Errorf("the passive party does not hold step %d intact (it holds %v)", step, holds)
	}
	if step > 0 {
		if err := r.store.verify(step); err != nil {
			return nil, fmt.Errorf("this party's checkpoint of step %d does not verify: %w", step, err)
		}
	}
	var reason string
	if err := r.store.verify(r.acked); err != nil {
		reason = fmt.Sprintf("the active party's checkpoint of step %d does not verify: %v", r.acked, err)
	} else if !slices.Contains(holds, r.acked) {
		reason = fmt.Sprintf("the passive party does not hold its checkpoint of step %d intact", r.acked)
	} else {
		return nil, fmt.Errorf("both parties hold step %d intact", r.acked)
	}
	return &rundir.CheckpointFallback{From: r.acked, To: step, Reason: reason}, nil
}

// fallbacksPath is the file recording the run's resumes from an older
// checkpoint, one JSON object a line.
func (s *store) fallbacksPath() string { return filepath.Join(s.dir, s.role+".fallbacks") }

// addFallback appends f to fallbacksPath (rewritten whole, atomically).
func (s *store) addFallback(f rundir.CheckpointFallback) error {
	all, err := s.readFallbacks()
	if err != nil {
		return err
	}
	var b []byte
	for _, g := range append(all, f) {
		line, err := json.Marshal(g)
		if err != nil {
			return err
		}
		b = append(append(b, line...), '\n')
	}
	if err := atomicfile.WriteFile(s.fallbacksPath(), b, 0o600); err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	return nil
}

// readFallbacks returns what fallbacksPath records (nothing when absent).
func (s *store) readFallbacks() ([]rundir.CheckpointFallback, error) {
	b, err := os.ReadFile(s.fallbacksPath())
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	var out []rundir.CheckpointFallback
	for i, line := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		var f rundir.CheckpointFallback
		if err := json.Unmarshal(line, &f); err != nil {
			return nil, fmt.Errorf("checkpoint: %s line %d: %w", s.fallbacksPath(), i+1, err)
		}
		out = append(out, f)
	}
	return out, nil
}
