package model_test

import (
	"fmt"
	"log"

	"github.com/splitguard/splitguard/data"
	"github.com/splitguard/splitguard/model"
	"github.com/splitguard/splitguard/nn"
	"github.com/splitguard/splitguard/tensor"
)

// A split Wide&Deep model: the passive party holds the bottom (deep
// embeddings and the first Cut Dense+ReLU layers), the active party the
// top (the remaining layers, the wide part over its own columns, the
// logit). One forward pass of a batch of two rows: the bottom's cut
// embedding crosses to the active party, which turns it into logits.
func ExampleNewWideDeep() {
	cfg := model.Config{Widths: []int{16, 8, 8}, Cut: 2, EmbDim: 3, Seed: 7}
	passive := model.Schema{Cardinality: []int{10, 5}, NumDense: 2} // the passive party's columns
	active := model.Schema{Cardinality: []int{4}, NumDense: 1}      // the active party's (wide) columns
	bottom, top, err := model.NewWideDeep(cfg, passive, active)
	if err != nil {
		log.Fatal(err)
	}

	// Two rows: categorical ids row by row, dense values as a matrix.
	in := &data.Batch{Rows: 2, Cat: []int32{3, 0, 9, 4}, Dense: tensor.New(2, 2)}
	copy(in.Dense.Data, []float32{0.5, 0.1, 0.0, 0.9})
	wide := &data.Batch{Rows: 2, Cat: []int32{1, 2}, Dense: tensor.New(2, 1)}

	cut, err := bottom.Forward(in)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("cut embedding: %d×%d (CutDim %d), %d observable layers\n", cut.Rows, cut.Cols, bottom.CutDim(), len(bottom.Outputs()))

	logits, err := top.Forward(cut, wide)
	if err != nil {
		log.Fatal(err)
	}
	probs := make([]float32, len(logits))
	nn.Sigmoid(probs, logits)
	fmt.Printf("%d logits; probabilities %.2f\n", len(logits), probs)
	// Output:
	// cut embedding: 2×8 (CutDim 8), 2 observable layers
	// 2 logits; probabilities [0.52 0.58]
}
