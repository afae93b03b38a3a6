package run

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// jsonLines appends one JSON object per line to a file. Every line is
// written with a single write call, so a crash never leaves half a line;
// encoding/json refuses NaN and ±Inf, so none is ever written.
type jsonLines struct {
	f    *os.File
	path string
	buf  []byte
}

func createJSONLines(path string) (*jsonLines, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	return &jsonLines{f: f, path: path}, nil
}

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

func (w *jsonLines) Close() error { return w.f.Close() }

// writeFileAtomic writes data to a temporary file beside path and renames
// it into place, so readers see either the old file or the whole new one.
func writeFileAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	_, werr := tmp.Write(data)
	serr := tmp.Sync()
	cerr := tmp.Close()
	if err := firstErr(werr, serr, cerr); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("%s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return nil
}

// writeJSONAtomic writes v as indented JSON through writeFileAtomic.
func writeJSONAtomic(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return writeFileAtomic(path, append(b, '\n'))
}

func firstErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}
