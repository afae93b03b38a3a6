package attack_test

import (
	"fmt"

	"github.com/splitguard/splitguard/attack"
	"github.com/splitguard/splitguard/tensor"
)

// ExampleNew runs the norm attack on one batch of received gradients:
// every row's score is its Euclidean norm.
func ExampleNew() {
	a, err := attack.New("norm")
	if err != nil {
		panic(err)
	}
	g := tensor.New(3, 2)
	copy(g.Data, []float32{3, 4, 0, 1, 6, 8})
	scores, scored := make([]float64, 3), make([]bool, 3)
	if err := a.Score(&attack.Observation{Layer: "cut", X: g}, scores, scored); err != nil {
		panic(err)
	}
	fmt.Println(scores, scored)

	// What an attack needs is declared, never implied by its name.
	needs, _ := attack.Describe("cosine")
	fmt.Printf("cosine needs the oracle: %v, label-free: %v\n", needs.Oracle, needs.LabelFree())
	// Output:
	// [5 1 10] [true true true]
	// cosine needs the oracle: true, label-free: false
}
