package protect_test

import (
	"fmt"
	"math/rand/v2"

	"github.com/splitguard/splitguard/protect"
	"github.com/splitguard/splitguard/tensor"
)

// ExampleNew builds a protection from the registry by name and parameters
// and perturbs one batch's gradient with it.
func ExampleNew() {
	p, err := protect.New("max_norm", nil)
	if err != nil {
		panic(err)
	}
	// Two examples' gradients with norms 5 and 1.
	g := tensor.New(2, 2)
	copy(g.Data, []float32{3, 4, 0, 1})
	out := &tensor.Matrix{}
	stats, err := p.Protect(&protect.Batch{Grad: g, Labels: []float32{1, 0}, Probs: []float32{0.4, 0.1}}, out, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		panic(err)
	}
	fmt.Println(p.Name(), out.Rows, "×", out.Cols, len(stats) > 0)

	// A parameter of another protection is refused.
	_, err = protect.New("iso", protect.Params{"marvell_s": 4})
	fmt.Println(err)

	// Legends come from the registry too.
	fmt.Println(protect.Describe("marvell", protect.Params{"marvell_s": 4, "dcor_alpha": 0.005}).Text)
	// Output:
	// max_norm 2 × 2 true
	// parameter marvell_s (key marvell_s) belongs to protection marvell, but the protection (key protect) is iso: choose protection marvell or drop the parameter
	// marvell s=4 + dcor α=0.005
}
