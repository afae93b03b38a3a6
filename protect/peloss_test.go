package protect

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/splitguard/splitguard/tensor"
)

// TestPELossHand: rows 0 and 1 of class 1 at 0 and 3 on a line, row 2 the
// only one of class 0 at 7. With D = √(9 + ε²) the energy is
// α·(1/2)·(1/D + 1/D) = α/D; row 0 is pushed away from row 1 by 3α/D³,
// row 1 the other way, and row 2 feels nothing.
func TestPELossHand(t *testing.T) {
	const alpha = 1.5
	l, err := NewPELoss(alpha)
	if err != nil {
		t.Fatal(err)
	}
	e := &tensor.Matrix{Rows: 3, Cols: 1, Data: []float32{0, 3, 7}}
	grad := &tensor.Matrix{Rows: 3, Cols: 1, Data: []float32{0.25, 0.25, 0.25}}
	loss, err := l.AddLossGrad(e, []float32{1, 1, 0}, grad)
	if err != nil {
		t.Fatal(err)
	}
	D := math.Sqrt(9 + peSoftening*peSoftening)
	if math.Abs(loss-alpha/D) > 1e-12 {
		t.Errorf("loss %v, want %v", loss, alpha/D)
	}
	want := []float64{0.25 + 3*alpha/(D*D*D), 0.25 - 3*alpha/(D*D*D), 0.25}
	for i, w := range want {
		if math.Abs(float64(grad.Data[i])-w) > 1e-6 {
			t.Errorf("row %d: gradient %v, want %v (the loss term's added to 0.25)", i, grad.Data[i], w)
		}
	}
}

// peEnergy is L_PE written out over every ordered pair, apart from the
// defence's code.
func peEnergy(alpha float64, x []float64, n, d int, y []float32) float64 {
	var per [2]float64
	var count [2]float64
	for _, v := range y {
		count[int(v)]++
	}
	for i := range n {
		for j := range n {
			if i == j || y[i] != y[j] {
				continue
			}
			s := peSoftening * peSoftening
			for k := range d {
				diff := x[i*d+k] - x[j*d+k]
				s += diff * diff
			}
			per[int(y[i])] += 1 / math.Sqrt(s)
		}
	}
	var l float64
	for c := range 2 {
		if count[c] >= 2 {
			l += per[c] / count[c]
		}
	}
	return alpha * l
}

// TestPELossRandomBatch checks the loss against the written-out energy
// and the gradient against its central differences.
func TestPELossRandomBatch(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 5))
	const n, d, alpha = 9, 4, 0.7
	e := tensor.New(n, d)
	x := make([]float64, n*d)
	for k := range e.Data {
		e.Data[k] = float32(r.NormFloat64())
		x[k] = float64(e.Data[k])
	}
	y := []float32{1, 0, 0, 1, 1, 0, 1, 0, 0}
	l, _ := NewPELoss(alpha)
	grad := tensor.New(n, d)
	loss, err := l.AddLossGrad(e, y, grad)
	if err != nil {
		t.Fatal(err)
	}
	if want := peEnergy(alpha, x, n, d, y); math.Abs(loss-want) > 1e-9*want {
		t.Errorf("loss %v, written out %v", loss, want)
	}
	for k := range x {
		const h = 1e-5
		x0 := x[k]
		x[k] = x0 + h
		up := peEnergy(alpha, x, n, d, y)
		x[k] = x0 - h
		down := peEnergy(alpha, x, n, d, y)
		x[k] = x0
		fd := (up - down) / (2 * h)
		if math.Abs(fd-float64(grad.Data[k])) > 1e-4*math.Max(1, math.Abs(fd)) {
			t.Errorf("∂L/∂e[%d] = %v, central difference %v", k, grad.Data[k], fd)
		}
	}
}

// TestPELossRefuses: labels other than 0/1, mismatched shapes and α ≤ 0.
func TestPELossRefuses(t *testing.T) {
	l, _ := NewPELoss(1)
	e, g := tensor.New(2, 2), tensor.New(2, 2)
	if _, err := l.AddLossGrad(e, []float32{1, 0.5}, g); err == nil || !strings.Contains(err.Error(), "row 1") {
		t.Errorf("label 0.5: error %v", err)
	}
	if _, err := l.AddLossGrad(e, []float32{1}, g); err == nil {
		t.Error("one label for two rows: no error")
	}
	if _, err := l.AddLossGrad(e, []float32{1, 1}, tensor.New(2, 3)); err == nil {
		t.Error("gradient of another shape: no error")
	}
	for _, a := range []float64{0, -1, math.Inf(1), math.NaN()} {
		if _, err := NewPELoss(a); err == nil || !strings.Contains(err.Error(), "peloss_alpha") {
			t.Errorf("α = %v: error %v", a, err)
		}
	}
	if err := Check("none", Params{"peloss_alpha": 2}); err != nil {
		t.Error(err)
	}
	// Two equal rows of one class: finite (softened), no push either way.
	loss, err := l.AddLossGrad(e, []float32{1, 1}, g)
	if err != nil || math.Abs(loss-2/(2*peSoftening)) > 1e-9 || g.Data[0] != 0 {
		t.Errorf("equal rows: loss %v, gradient %v, error %v", loss, g.Data, err)
	}
}
