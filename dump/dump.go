// Package dump writes and reads per-batch NumPy dumps of what an offline
// attacker would want (gradients, embeddings, labels, IDs) for the
// `attack multiclass` command and for analysis outside splitguard.
package dump

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/sbinet/npyio"
	"gonum.org/v1/gonum/mat"

	"github.com/splitguard/splitguard/audit"
	"github.com/splitguard/splitguard/tensor"
)

// Writer writes, for the first few training batches, what an offline
// attacker would want: the received cut-layer gradients, the first
// layer's gradients, the cut-layer embeddings, the labels and the example
// IDs, as NumPy .npy files, with index.jsonl listing them. Labels appear
// only here, in simulation output, never on a wire.
type Writer struct {
	dir   string
	limit int
	n     int
	index *os.File
}

// entry is one line of index.jsonl; paths are relative to the dump
// directory.
type entry struct {
	Step         int64  `json:"step"`
	Epoch        int    `json:"epoch"`
	Labels       string `json:"labels"`
	IDs          string `json:"ids"`
	CutGrad      string `json:"cut_grad"`
	FirstGrad    string `json:"first_grad"`
	CutEmbedding string `json:"cut_embedding"`
}

// NewWriter returns a writer of the first limit batches (0: 10) into dir.
func NewWriter(dir string, limit int) (*Writer, error) {
	if limit <= 0 {
		limit = 10
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	idx, err := os.Create(filepath.Join(dir, "index.jsonl"))
	if err != nil {
		return nil, err
	}
	return &Writer{dir: dir, limit: limit, index: idx}, nil
}

// Close closes the index.
func (d *Writer) Close() error { return d.index.Close() }

// Batch dumps one audited batch (every passive layer's gradient and
// output, the labels and IDs) while fewer than the limit were written.
func (d *Writer) Batch(ob *audit.Batch) error {
	if d.n >= d.limit {
		return nil
	}
	d.n++
	e := entry{Step: ob.Step, Epoch: ob.Epoch}
	name := func(what string) string { return fmt.Sprintf("step%06d_%s.npy", ob.Step, what) }
	L := len(ob.Grads)
	e.Labels, e.IDs, e.CutGrad, e.FirstGrad, e.CutEmbedding = name("labels"), name("ids"), name("cut_grad"), name("first_grad"), name("cut_embedding")
	writes := []struct {
		path string
		val  any
	}{
		{e.Labels, ob.Labels},
		{e.IDs, ob.IDs},
		{e.CutGrad, d.dense(ob.Grads[L-1])},
		{e.FirstGrad, d.dense(ob.Grads[0])},
		{e.CutEmbedding, d.dense(ob.Outputs[L-1])},
	}
	for _, w := range writes {
		if err := writeNPY(filepath.Join(d.dir, w.path), w.val); err != nil {
			return err
		}
	}
	line, err := json.Marshal(e)
	if err != nil {
		return err
	}
	_, err = d.index.Write(append(line, '\n'))
	return err
}

// dense converts m to a float64 gonum matrix (exact: every float32 is a
// float64), the 2-D form npyio writes with its shape.
func (d *Writer) dense(m *tensor.Matrix) *mat.Dense {
	buf := make([]float64, len(m.Data))
	for i, v := range m.Data {
		buf[i] = float64(v)
	}
	return mat.NewDense(m.Rows, m.Cols, buf)
}

func writeNPY(path string, val any) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := npyio.Write(f, val); err != nil {
		f.Close()
		return fmt.Errorf("%s: %w", path, err)
	}
	return f.Close()
}
