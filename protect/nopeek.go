package protect

import (
	"fmt"
	"io"
	"math"

	"github.com/splitguard/splitguard/tensor"
)

// FeatureReader is a layer at the passive party's output that reads the
// raw features of the batch beside the embedding (NoPeek). The bottom
// that wraps it (config.OutputBottom) hands them before every Forward:
// dense is the batch's B×k dense values (nil or 0 columns for none), cat
// its B×numCat categorical ids, row-major.
type FeatureReader interface {
	SetFeatures(dense *tensor.Matrix, cat []int32, numCat int)
}

func init() {
	Register(Spec{Name: "nopeek", Color: 0x8c6d31, Role: AddOn,
		Help: "NoPeek at the passive party: a distance-correlation loss between the passive's raw features and its embedding (a defence of the features)",
		Params: []Param{{Key: "nopeek_alpha", Symbol: "α", Help: "NoPeek weight α of dCor(x, e) in the passive's loss",
			Min: 0, MinOpen: true, Max: math.Inf(1)}},
		NewPassiveOutput: func(p Params, _ InputOptions) (PassiveOutput, error) { return NewNoPeek(p.Get("nopeek_alpha")) }})
}

// NoPeek is the defence of Vepakomma et al. (ICDMW 2020) at the passive
// party's output: the embedding is sent unchanged, and the passive adds
// to the gradient it receives the gradient of α·dCor(x, e), the
// (squared) distance correlation between the batch's raw features x and
// its embedding e,
//
//	dCor(x, e) = Σ A∘B / sqrt(Σ A∘A · Σ B∘B),
//
// A and B the double-centred matrices of the pairwise distances a_ij =
// sqrt(‖dense_i − dense_j‖² + #{categorical columns where i and j
// differ}) and b_ij = ‖e_i − e_j‖ (the form of the dCor label defence,
// METHODS §4). Because double centring is a projection, Σ A∘B = Σ A∘b and
// Σ B∘B = Σ B∘b, so with G = ∂dCor/∂b = (A − dCor·sqrt(ΣA∘A/ΣB∘B)·B) /
// sqrt(ΣA∘A·ΣB∘B), ∂dCor/∂e_i = 2·Σ_j G_ij (e_i − e_j)/b_ij. A batch of
// fewer than two rows, constant features or a constant embedding adds
// nothing. It has no parameter to train and nothing to save.
type NoPeek struct {
	alpha float64

	dense  *tensor.Matrix
	cat    []int32
	numCat int

	e       tensor.Matrix // the last training Forward's embedding
	a       []float64     // its features' double-centred distances
	loss    float64
	trained bool
	grad    tensor.Matrix
	aud     tensor.Matrix
}

// NewNoPeek returns NoPeek with weight alpha > 0.
func NewNoPeek(alpha float64) (*NoPeek, error) {
	if !(alpha > 0) || math.IsInf(alpha, 0) {
		return nil, fmt.Errorf("protect: NoPeek weight α = %v, want a finite α > 0", alpha)
	}
	return &NoPeek{alpha: alpha}, nil
}

// Name returns "nopeek".
func (*NoPeek) Name() string { return "nopeek" }

// SetFeatures implements FeatureReader.
func (n *NoPeek) SetFeatures(dense *tensor.Matrix, cat []int32, numCat int) {
	n.dense, n.cat, n.numCat = dense, cat, numCat
}

// Forward returns e unchanged; in training it keeps e and the features'
// distances for Backward.
func (n *NoPeek) Forward(e *tensor.Matrix, training bool) (*tensor.Matrix, error) {
	if !training {
		return e, nil
	}
	rows := e.Rows
	if n.dense != nil && n.dense.Cols > 0 && n.dense.Rows != rows || n.numCat > 0 && len(n.cat) != rows*n.numCat {
		return nil, fmt.Errorf("protect: NoPeek: the features given are not of the %d embedding rows", rows)
	}
	n.e.Resize(rows, e.Cols)
	copy(n.e.Data, e.Data)
	n.a = doubleCentre(featureDistances(n.dense, n.cat, n.numCat, rows), rows)
	n.trained = true
	dc, _ := NoPeekDCor(n.a, &n.e)
	n.loss = n.alpha * dc
	return e, nil
}

// Backward returns g plus α·∂dCor(x, e)/∂e at the last training Forward.
func (n *NoPeek) Backward(g *tensor.Matrix) (*tensor.Matrix, error) { return n.backward(g, &n.grad) }

// Backprop is Backward into a separate buffer (NoPeek has no state to
// leave alone).
func (n *NoPeek) Backprop(g *tensor.Matrix) (*tensor.Matrix, error) { return n.backward(g, &n.aud) }

func (n *NoPeek) backward(g, dst *tensor.Matrix) (*tensor.Matrix, error) {
	if !n.trained {
		return nil, fmt.Errorf("protect: NoPeek backward before a training forward")
	}
	if g.Rows != n.e.Rows || g.Cols != n.e.Cols {
		return nil, fmt.Errorf("protect: NoPeek backward of a %d×%d gradient after a %d×%d forward", g.Rows, g.Cols, n.e.Rows, n.e.Cols)
	}
	dst.Resize(g.Rows, g.Cols)
	copy(dst.Data, g.Data)
	_, grad := NoPeekDCor(n.a, &n.e)
	for i, v := range grad {
		dst.Data[i] += float32(n.alpha * v)
	}
	return dst, nil
}

// RegLoss is α·dCor(x, e) of the last training Forward.
func (n *NoPeek) RegLoss() float64 { return n.loss }

// Step does nothing: NoPeek has no parameters.
func (*NoPeek) Step() error { return nil }

// Save writes nothing.
func (*NoPeek) Save(io.Writer) error { return nil }

// Load reads nothing and refuses leftover bytes.
func (*NoPeek) Load(r io.Reader) error {
	if b, err := io.ReadAll(r); err != nil || len(b) > 0 {
		return fmt.Errorf("protect: NoPeek has no state, got %d bytes (%v)", len(b), err)
	}
	return nil
}

// featureDistances returns the rows×rows matrix of the distances between
// the rows' features (see NoPeek).
func featureDistances(dense *tensor.Matrix, cat []int32, numCat, rows int) []float64 {
	d := make([]float64, rows*rows)
	for i := 0; i < rows; i++ {
		for j := i + 1; j < rows; j++ {
			var s float64
			if dense != nil {
				ri, rj := dense.Row(i), dense.Row(j)
				for k := range ri {
					t := float64(ri[k]) - float64(rj[k])
					s += t * t
				}
			}
			for k := 0; k < numCat; k++ {
				if cat[i*numCat+k] != cat[j*numCat+k] {
					s++
				}
			}
			d[i*rows+j] = math.Sqrt(s)
			d[j*rows+i] = d[i*rows+j]
		}
	}
	return d
}

// doubleCentre subtracts row and column means and adds the grand mean.
func doubleCentre(d []float64, n int) []float64 {
	row := make([]float64, n)
	var all float64
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			row[i] += d[i*n+j]
		}
		all += row[i]
		row[i] /= float64(n)
	}
	all /= float64(n * n)
	out := make([]float64, n*n)
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			out[i*n+j] = d[i*n+j] - row[i] - row[j] + all // d symmetric: column means = row means
		}
	}
	return out
}

// NoPeekDCor returns dCor(x, e) for the features' double-centred distance
// matrix a and the embedding e, and its gradient with respect to e
// (row-major, e's shape). It is 0 with a zero gradient for fewer than two
// rows, constant features or a constant embedding.
func NoPeekDCor(a []float64, e *tensor.Matrix) (float64, []float64) {
	n, d := e.Rows, e.Cols
	grad := make([]float64, n*d)
	if n < 2 {
		return 0, grad
	}
	b := make([]float64, n*n)
	for i := 0; i < n; i++ {
		for j := i + 1; j < n; j++ {
			ri, rj := e.Row(i), e.Row(j)
			var s float64
			for k := range ri {
				t := float64(ri[k]) - float64(rj[k])
				s += t * t
			}
			b[i*n+j] = math.Sqrt(s)
			b[j*n+i] = b[i*n+j]
		}
	}
	bc := doubleCentre(b, n)
	var sAB, sAA, sBB float64
	for k := range a {
		sAB += a[k] * b[k]
		sAA += a[k] * a[k]
		sBB += bc[k] * b[k]
	}
	if sAA <= 1e-300 || sBB <= 1e-300 {
		return 0, grad
	}
	norm := math.Sqrt(sAA * sBB)
	dc := sAB / norm
	c := dc * math.Sqrt(sAA/sBB)
	for i := 0; i < n; i++ {
		ri := e.Row(i)
		gi := grad[i*d : (i+1)*d]
		for j := 0; j < n; j++ {
			if j == i || b[i*n+j] == 0 {
				continue
			}
			gij := 2 * (a[i*n+j] - c*bc[i*n+j]) / norm / b[i*n+j]
			rj := e.Row(j)
			for k := range gi {
				gi[k] += gij * (float64(ri[k]) - float64(rj[k]))
			}
		}
	}
	return dc, grad
}
