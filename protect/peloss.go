package protect

import (
	"fmt"
	"math"

	"github.com/splitguard/splitguard/configkey"
	"github.com/splitguard/splitguard/internal/buf"
	"github.com/splitguard/splitguard/tensor"
)

// peSoftening is the ε of the softened distance √(‖e_i − e_j‖² + ε²): two
// equal embedding rows (two all-zero ReLU outputs, say) would otherwise
// have infinite energy and an undefined gradient.
const peSoftening = 1e-2

func init() {
	Register(Spec{Name: "peloss", Color: 0x9e0142, Role: AddOn, Help: "potential energy loss: embeddings of the same class repel each other as like charges",
		Params:  []Param{{Key: "peloss_alpha", Symbol: "α", Help: "potential energy loss weight α", Min: 0, MinOpen: true, Max: math.Inf(1)}},
		NewLoss: func(p Params) (LossTerm, error) { return NewPELoss(p.Get("peloss_alpha")) }})
}

// PELoss is the potential energy loss of Zheng, Chen, Lyu, Fu, Fu, Wang,
// Zheng and Yin ("Protecting split learning by potential energy loss",
// IJCAI 2024): the cut embeddings of one class are treated as like
// charges, and their Coulomb energy is added to the active party's loss,
//
//	L_PE = α·Σ_c (1/n_c)·Σ_{i≠j: y_i = y_j = c} 1/d_ij,
//
// over ordered pairs of the batch's rows of class c (n_c of them; a class
// with fewer than two rows adds nothing), as in the implementation of
// SecretFlow's PELoss. The repulsion pushes each class's embeddings apart,
// towards the decision boundary, so that a few known labels (model
// completion) or clustering (the spectral attack) tell the attacker
// little. d_ij is the distance softened by ε = 10⁻²,
// √(‖e_i − e_j‖² + ε²) (ours: the paper's unsoftened distance is infinite
// for two equal rows). The gradient the passive party receives gains
//
//	∂L_PE/∂e_i = −(2α/n_c)·Σ_{j≠i, y_j = y_i} (e_i − e_j)/d_ij³.
//
// Nothing bounds the scale of the embeddings: the bottom can lower the
// energy by spreading them out, which the top can absorb. Cost O(B²·d)
// per batch. A PELoss holds buffers: use it from one goroutine.
type PELoss struct {
	// Alpha is the weight α > 0.
	Alpha float64

	e  []float64 // the embedding in float64
	gr []float64 // ∂L_PE/∂e
}

// NewPELoss returns the potential energy loss with weight α > 0.
func NewPELoss(alpha float64) (*PELoss, error) {
	if !(alpha > 0) || math.IsInf(alpha, 0) {
		return nil, configkey.Keyed(fmt.Errorf("protect: potential energy loss weight α = %v, want a finite α > 0 (key peloss_alpha)", alpha), "peloss_alpha")
	}
	return &PELoss{Alpha: alpha}, nil
}

// Name returns "peloss".
func (*PELoss) Name() string { return "peloss" }

// AddLossGrad returns L_PE of a batch and ADDS its gradient with respect
// to e into grad (n×d, the shape of e). y holds one label per row of e,
// each 0 or 1.
func (l *PELoss) AddLossGrad(e *tensor.Matrix, y []float32, grad *tensor.Matrix) (float64, error) {
	if e == nil || grad == nil {
		return 0, fmt.Errorf("protect: potential energy loss: nil embedding or gradient")
	}
	n, d := e.Rows, e.Cols
	if len(y) != n {
		return 0, fmt.Errorf("protect: potential energy loss: %d labels for %d embedding rows", len(y), n)
	}
	if !tensor.SameShape(e, grad) {
		return 0, fmt.Errorf("protect: potential energy loss: gradient is %d×%d, embedding %d×%d", grad.Rows, grad.Cols, n, d)
	}
	if err := tensor.CheckFinite("protect: potential energy loss: embedding", e); err != nil {
		return 0, err
	}
	var count [2]int
	for i, v := range y {
		if v != 0 && v != 1 {
			return 0, fmt.Errorf("protect: potential energy loss: label %v at row %d, want 0 or 1", v, i)
		}
		count[int(v)]++
	}
	l.e, l.gr = buf.Grow(l.e, n*d), buf.Grow(l.gr, n*d)
	for k, v := range e.Data[:n*d] {
		l.e[k] = float64(v)
	}
	clear(l.gr)
	var loss float64
	for i := range n {
		c := int(y[i])
		if count[c] < 2 {
			continue
		}
		w := l.Alpha / float64(count[c])
		ei, gi := l.e[i*d:(i+1)*d], l.gr[i*d:(i+1)*d]
		for j := i + 1; j < n; j++ {
			if y[j] != y[i] {
				continue
			}
			ej, gj := l.e[j*d:(j+1)*d], l.gr[j*d:(j+1)*d]
			d2 := peSoftening * peSoftening
			for k, x := range ei {
				diff := x - ej[k]
				d2 += diff * diff
			}
			s := 1 / math.Sqrt(d2)
			loss += 2 * w * s // (i, j) and (j, i)
			f := 2 * w * s * s * s
			for k, x := range ei {
				diff := f * (x - ej[k])
				gi[k] -= diff
				gj[k] += diff
			}
		}
	}
	for k, v := range l.gr {
		grad.Data[k] += float32(v)
	}
	if err := tensor.CheckFinite("protect: potential energy loss: gradient", grad); err != nil {
		return 0, err
	}
	return loss, nil
}
