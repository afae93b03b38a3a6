package protect

import (
	"bytes"
	"slices"
	"testing"

	"github.com/splitguard/splitguard/tensor"
)

// checkLayerResumes trains layer a one step on x (x also serving as the
// gradient), saves it, takes a second step, and checks that the saved
// state loaded into fresh takes the same second step bit for bit; other
// (another shape) and a truncated state must refuse it.
func checkLayerResumes(t *testing.T, a, fresh, other InputLayer, x *tensor.Matrix) {
	t.Helper()
	step := func(l InputLayer) *tensor.Matrix {
		if _, err := l.Forward(x, true); err != nil {
			t.Fatal(err)
		}
		dx, err := l.Backward(x)
		if err != nil {
			t.Fatal(err)
		}
		dx = dx.Clone()
		if err := l.Step(); err != nil {
			t.Fatal(err)
		}
		return dx
	}
	step(a)
	var buf bytes.Buffer
	if err := a.Save(&buf); err != nil {
		t.Fatal(err)
	}
	saved := bytes.Clone(buf.Bytes())
	want := step(a)
	if err := fresh.Load(bytes.NewReader(saved)); err != nil {
		t.Fatal(err)
	}
	if got := step(fresh); !slices.Equal(got.Data, want.Data) {
		t.Errorf("a loaded %s does not continue bit-identically", a.Name())
	}
	if err := other.Load(bytes.NewReader(saved)); err == nil {
		t.Errorf("%s: a state of another shape loaded", a.Name())
	}
	if err := fresh.Load(bytes.NewReader(saved[:len(saved)-3])); err == nil {
		t.Errorf("%s: a truncated state loaded", a.Name())
	}
}
