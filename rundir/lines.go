package rundir

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/splitguard/splitguard/atomicfile"
)

// jsonLines appends one JSON object per line to a file. Every line is
// written with a single write call, so a crash never leaves half a line;
// encoding/json refuses NaN and ±Inf, so none is ever written.
type jsonLines struct {
	f    *os.File
	path string
	buf  []byte
}

// openLines opens path for appending, keeping the lines keep accepts of
// what it holds (all of them when keep is nil; a missing file is empty).
// The kept lines are written back atomically before appending starts.
func openLines(path string, keep func([]byte) (bool, error)) (*jsonLines, error) {
	f, err := KeepLines(path, keep)
	if err != nil {
		return nil, err
	}
	return &jsonLines{f: f, path: path}, nil
}

// KeepLines keeps the lines of the line-oriented file path that keep
// accepts (none when keep is nil; a missing file is empty), replaces the
// file atomically with them and opens it for appending.
func KeepLines(path string, keep func([]byte) (bool, error)) (*os.File, error) {
	var kept bytes.Buffer
	if keep != nil {
		if err := filterLines(path, keep, &kept); err != nil {
			return nil, err
		}
	}
	if err := atomicfile.WriteFile(path, kept.Bytes(), FileMode); err != nil {
		return nil, err
	}
	return os.OpenFile(path, os.O_WRONLY|os.O_APPEND, FileMode)
}

// AppendLine appends v to f as one JSON line with a single write.
func AppendLine(f *os.File, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("%s: %w", f.Name(), err)
	}
	if _, err := f.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("%s: %w", f.Name(), err)
	}
	return nil
}

// filterLines copies into out the lines of path that keep accepts.
func filterLines(path string, keep func([]byte) (bool, error), out *bytes.Buffer) error {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for n := 1; sc.Scan(); n++ {
		ok, err := keep(sc.Bytes())
		if err != nil {
			return fmt.Errorf("%s line %d: %w", path, n, err)
		}
		if ok {
			out.Write(sc.Bytes())
			out.WriteByte('\n')
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// Write appends v as one line.
func (w *jsonLines) Write(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("%s: %w", w.path, err)
	}
	w.buf = append(append(w.buf[:0], b...), '\n')
	if _, err := w.f.Write(w.buf); err != nil {
		return fmt.Errorf("%s: %w", w.path, err)
	}
	return nil
}

func (w *jsonLines) Close() error {
	if w == nil {
		return nil
	}
	return w.f.Close()
}

// ReadSummary reads the summary.json of the run directory dir.
func ReadSummary(dir string) (*Summary, error) {
	path := filepath.Join(dir, SummaryFile)
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var s Summary
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &s, nil
}

// WriteJSON atomically writes v as indented JSON to path.
func WriteJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return atomicfile.WriteFile(path, append(b, '\n'), FileMode)
}
