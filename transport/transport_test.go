package transport

import (
	"math"
	"strings"
	"testing"

	"github.com/splitguard/splitguard/tensor"
)

// TestPrecedes checks the order against the order in which a passive party
// sends a run's messages (written out by hand): two epochs of three
// batches, an evaluation round of two batches every three steps and at
// the end.
func TestPrecedes(t *testing.T) {
	sent := []*Forward{
		{Phase: Eval, Step: 0, Batch: 0}, // an evaluation before training
		{Phase: Eval, Step: 0, Batch: 1},
		{Phase: Train, Step: 0, Epoch: 0, Batch: 0},
		{Phase: Train, Step: 1, Epoch: 0, Batch: 1},
		{Phase: Train, Step: 2, Epoch: 0, Batch: 2},
		{Phase: Eval, Step: 3, Batch: 0},
		{Phase: Eval, Step: 3, Batch: 1},
		{Phase: Train, Step: 3, Epoch: 1, Batch: 0},
		{Phase: Train, Step: 4, Epoch: 1, Batch: 1},
		{Phase: Train, Step: 5, Epoch: 1, Batch: 2},
		{Phase: Eval, Step: 6, Batch: 0},
		{Phase: Eval, Step: 6, Batch: 1},
	}
	for i, a := range sent {
		for j, b := range sent {
			if got, want := Precedes(a, b), i < j; got != want {
				t.Errorf("Precedes(%v step %d batch %d, %v step %d batch %d) = %v, want %v",
					a.Phase, a.Step, a.Batch, b.Phase, b.Step, b.Batch, got, want)
			}
		}
	}
}

func matrix(rows, cols int, vals ...float32) *tensor.Matrix {
	m := tensor.New(rows, cols)
	copy(m.Data, vals)
	return m
}

// checkErr fails t unless err is nil (want "") or contains want.
func checkErr(t *testing.T, err error, want string) {
	t.Helper()
	switch {
	case want == "" && err != nil:
		t.Fatalf("refused: %v", err)
	case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
		t.Fatalf("got %v, want an error containing %q", err, want)
	}
}

func TestValidateForward(t *testing.T) {
	ids := []uint64{5, 9}
	good := func() *Forward {
		return &Forward{Phase: Train, Step: 7, Batch: 1, IDs: []uint64{5, 9}, Embedding: matrix(2, 3, 1, 2, 3, 4, 5, 6)}
	}
	tests := []struct {
		name   string
		mutate func(f *Forward)
		want   string // "" for no error
	}{
		{"valid", func(*Forward) {}, ""},
		{"other phase", func(f *Forward) { f.Phase = Eval }, "got a eval message, want train"},
		{"other step", func(f *Forward) { f.Step = 6 }, "got step 6 batch 1, want step 7 batch 1"},
		{"other batch", func(f *Forward) { f.Batch = 2 }, "got step 7 batch 2, want step 7 batch 1"},
		{"an ID too few", func(f *Forward) { f.IDs = f.IDs[:1] }, "1 example IDs, schedule has 2"},
		{"another ID", func(f *Forward) { f.IDs[1] = 10 }, "example 1 has ID 10, schedule has 9"},
		{"no embedding", func(f *Forward) { f.Embedding = nil }, "embedding shape none, want 2×3"},
		{"a row too many", func(f *Forward) { f.Embedding = tensor.New(3, 3) }, "embedding shape 3×3, want 2×3"},
		{"another width", func(f *Forward) { f.Embedding = tensor.New(2, 4) }, "embedding shape 2×4, want 2×3"},
		{"NaN", func(f *Forward) { f.Embedding.Data[4] = float32(math.NaN()) }, "step 7 batch 1: embedding"},
		{"-Inf", func(f *Forward) { f.Embedding.Data[0] = float32(math.Inf(-1)) }, "step 7 batch 1: embedding"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := good()
			tc.mutate(f)
			checkErr(t, ValidateForward(f, Train, 7, 1, ids, 3), tc.want)
		})
	}
}

func TestValidateBackward(t *testing.T) {
	tests := []struct {
		name string
		b    *Backward
		want string
	}{
		{"valid", &Backward{Step: 7, Batch: 1, Grad: matrix(2, 3)}, ""},
		{"other step", &Backward{Step: 8, Batch: 1, Grad: matrix(2, 3)}, "gradient for step 8 batch 1, want step 7 batch 1"},
		{"other batch", &Backward{Step: 7, Batch: 0, Grad: matrix(2, 3)}, "gradient for step 7 batch 0, want step 7 batch 1"},
		{"no gradient", &Backward{Step: 7, Batch: 1}, "gradient shape none, want 2×3"},
		{"transposed", &Backward{Step: 7, Batch: 1, Grad: matrix(3, 2)}, "gradient shape 3×2, want 2×3"},
		{"+Inf", &Backward{Step: 7, Batch: 1, Grad: matrix(2, 3, 0, 0, float32(math.Inf(1)))}, "step 7 batch 1: gradient"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			checkErr(t, ValidateBackward(tc.b, 7, 1, 2, 3), tc.want)
		})
	}
}
