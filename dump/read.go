package dump

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/sbinet/npyio"
	"gonum.org/v1/gonum/mat"

	"github.com/splitguard/splitguard/tensor"
)

// Batch is one batch of a --dump directory as an offline attacker
// reads it back: the binary labels, the example IDs and the three arrays
// the run wrote (see dumper).
type Batch struct {
	Step   int64
	Epoch  int
	Labels []uint8
	IDs    []uint64
	// Arrays by their index.jsonl key: "cut_grad", "first_grad",
	// "cut_embedding".
	Arrays map[string]*tensor.Matrix
}

// Arrays are the index.jsonl keys of a dump's matrices.
var Arrays = []string{"cut_grad", "first_grad", "cut_embedding"}

// Read calls fn for every batch of the dump directory dir in the order
// of its index.jsonl. The batch passed to fn is valid only during the call.
func Read(dir string, fn func(*Batch) error) error {
	f, err := os.Open(filepath.Join(dir, "index.jsonl"))
	if err != nil {
		return fmt.Errorf("run: dump: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		if len(sc.Bytes()) == 0 {
			continue
		}
		var e entry
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			return fmt.Errorf("run: dump: index.jsonl line %d: %w", line, err)
		}
		b := &Batch{Step: e.Step, Epoch: e.Epoch, Arrays: map[string]*tensor.Matrix{}}
		if err := readDumpNPY(dir, e.Labels, &b.Labels); err != nil {
			return err
		}
		if err := readDumpNPY(dir, e.IDs, &b.IDs); err != nil {
			return err
		}
		paths := map[string]string{"cut_grad": e.CutGrad, "first_grad": e.FirstGrad, "cut_embedding": e.CutEmbedding}
		for _, k := range Arrays {
			p := paths[k]
			var m mat.Dense
			if err := readDumpNPY(dir, p, &m); err != nil {
				return err
			}
			r, c := m.Dims()
			if r != len(b.Labels) {
				return fmt.Errorf("run: dump: step %d: %s has %d rows for %d labels", e.Step, k, r, len(b.Labels))
			}
			x := tensor.New(r, c)
			for i := range r {
				row := x.Row(i)
				for j := range c {
					row[j] = float32(m.At(i, j))
				}
			}
			b.Arrays[k] = x
		}
		if len(b.IDs) != len(b.Labels) {
			return fmt.Errorf("run: dump: step %d: %d IDs for %d labels", e.Step, len(b.IDs), len(b.Labels))
		}
		if err := fn(b); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("run: dump: index.jsonl: %w", err)
	}
	return nil
}

func readDumpNPY(dir, name string, dst any) error {
	if name == "" {
		return fmt.Errorf("run: dump: index.jsonl names no file")
	}
	path := filepath.Join(dir, name)
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("run: dump: %w", err)
	}
	defer f.Close()
	// npyio reads element by element: without a buffer, a system call
	// each (a 256×128 gradient took a second on a loaded machine).
	if err := npyio.Read(bufio.NewReaderSize(f, 1<<16), dst); err != nil {
		return fmt.Errorf("run: dump: %s: %w", path, err)
	}
	return nil
}

// ReadClassesNPY reads a 1-D NumPy array of non-negative integer classes
// (any integer dtype, or bool) indexed by example ID, as the multi-class
// attack on a dump takes them; a class must be below 256.
func ReadClassesNPY(path string) ([]uint8, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r, err := npyio.NewReader(bufio.NewReaderSize(f, 1<<16))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(r.Header.Descr.Shape) != 1 {
		return nil, fmt.Errorf("%s: array of shape %v, want one dimension", path, r.Header.Descr.Shape)
	}
	var vals []int64
	read := func(ptr any, conv func() []int64) error {
		if err := r.Read(ptr); err != nil {
			return err
		}
		vals = conv()
		return nil
	}
	typ := r.Header.Descr.Type
	if len(typ) > 1 && (typ[0] == '<' || typ[0] == '>' || typ[0] == '|' || typ[0] == '=') {
		typ = typ[1:]
	}
	switch typ {
	case "u1":
		var v []uint8
		err = read(&v, func() []int64 { return widen(v) })
	case "b1":
		var v []bool
		err = read(&v, func() []int64 {
			out := make([]int64, len(v))
			for i, b := range v {
				if b {
					out[i] = 1
				}
			}
			return out
		})
	case "i1":
		var v []int8
		err = read(&v, func() []int64 { return widen(v) })
	case "u2":
		var v []uint16
		err = read(&v, func() []int64 { return widen(v) })
	case "i2":
		var v []int16
		err = read(&v, func() []int64 { return widen(v) })
	case "u4":
		var v []uint32
		err = read(&v, func() []int64 { return widen(v) })
	case "i4":
		var v []int32
		err = read(&v, func() []int64 { return widen(v) })
	case "u8":
		var v []uint64
		err = read(&v, func() []int64 {
			out := make([]int64, len(v))
			for i, x := range v {
				out[i] = int64(min(x, 1<<62))
			}
			return out
		})
	case "i8":
		err = read(&vals, func() []int64 { return vals })
	default:
		return nil, fmt.Errorf("%s: dtype %q, want an integer array", path, r.Header.Descr.Type)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	out := make([]uint8, len(vals))
	for i, v := range vals {
		if v < 0 || v > 255 {
			return nil, fmt.Errorf("%s: class %d of example %d outside [0, 255]", path, v, i)
		}
		out[i] = uint8(v)
	}
	return out, nil
}

// widen converts integer classes to int64.
func widen[T int8 | uint8 | int16 | uint16 | int32 | uint32](v []T) []int64 {
	out := make([]int64, len(v))
	for i, x := range v {
		out[i] = int64(x)
	}
	return out
}
