package netrun

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/splitguard/splitguard/run"
)

// recorder writes the active party's run directory: batches.jsonl,
// eval.jsonl and summary.json in the in-process run's formats (run's
// record types), plus config.yaml. After a rollback to step S it rewinds
// the files to what was known at S.
type recorder struct {
	dir              string
	batches, evals   *os.File
	lastLoss, protMS float64
	evalsSeen        []run.EvalRecord
	best             run.EvalRecord
	start            time.Time
}

func openRecorder(dir string) (*recorder, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	r := &recorder{dir: dir, start: time.Now()}
	// Keep what a previous process of this run wrote: the resume step,
	// known later, decides what stays (build rewinds to it).
	return r, r.rewind(math.MaxInt64)
}

// rewind keeps the batch records of steps < step and the evaluations of
// steps ≤ step and reopens the files for appending.
func (r *recorder) rewind(step int64) error {
	r.close()
	r.lastLoss, r.protMS, r.evalsSeen, r.best = 0, 0, nil, run.EvalRecord{TestAUC: -1}
	var err error
	r.batches, err = rewrite(filepath.Join(r.dir, "batches.jsonl"), func(line []byte) (bool, error) {
		var b run.BatchRecord
		if err := json.Unmarshal(line, &b); err != nil {
			return false, err
		}
		if b.Step >= step {
			return false, nil
		}
		r.lastLoss = b.Loss
		r.protMS += b.ProtectMS
		return true, nil
	})
	if err != nil {
		return err
	}
	r.evals, err = rewrite(filepath.Join(r.dir, "eval.jsonl"), func(line []byte) (bool, error) {
		var e run.EvalRecord
		if err := json.Unmarshal(line, &e); err != nil {
			return false, err
		}
		if e.Step > step {
			return false, nil
		}
		r.addEval(e)
		return true, nil
	})
	return err
}

// rewrite keeps the lines of path that keep accepts, replaces the file
// atomically and opens it for appending.
func rewrite(path string, keep func([]byte) (bool, error)) (*os.File, error) {
	var kept bytes.Buffer
	if f, err := os.Open(path); err == nil {
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		n := 0
		for sc.Scan() {
			n++
			ok, err := keep(sc.Bytes())
			if err != nil {
				f.Close()
				return nil, fmt.Errorf("%s line %d: %w", path, n, err)
			}
			if ok {
				kept.Write(sc.Bytes())
				kept.WriteByte('\n')
			}
		}
		f.Close()
		if err := sc.Err(); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	if err := writeFileAtomic(path, kept.Bytes()); err != nil {
		return nil, err
	}
	return os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0o644)
}

func (r *recorder) addEval(e run.EvalRecord) {
	r.evalsSeen = append(r.evalsSeen, e)
	if e.TestAUC > r.best.TestAUC {
		r.best = e
	}
}

// writeLine appends v as one JSON line with a single write.
func writeLine(f *os.File, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("%s: %w", f.Name(), err)
	}
	if _, err := f.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("%s: %w", f.Name(), err)
	}
	return nil
}

func (r *recorder) batch(b run.BatchRecord) error {
	r.lastLoss = b.Loss
	r.protMS += b.ProtectMS
	return writeLine(r.batches, b)
}

func (r *recorder) eval(e run.EvalRecord) error {
	r.addEval(e)
	return writeLine(r.evals, e)
}

func (r *recorder) close() {
	for _, f := range []*os.File{r.batches, r.evals} {
		if f != nil {
			f.Close()
		}
	}
	r.batches, r.evals = nil, nil
}

// writeFileAtomic writes data to a temporary file beside path and renames
// it into place.
func writeFileAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	_, werr := tmp.Write(data)
	serr := tmp.Sync()
	cerr := tmp.Close()
	if err := errors.Join(werr, serr, cerr); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("%s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}
