package protect

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/splitguard/splitguard/tensor"
)

// TestReference checks that the built-in reference is the clean gradient
// (a protection that returns the gradient unchanged), that the legends of
// a run without any defence name it, and that a second reference, or a
// reference with parameters or as an add-on, is refused.
func TestReference(t *testing.T) {
	if got := Reference(); got != "none" {
		t.Fatalf("Reference() = %q, want none", got)
	}
	if !IsReference("") || !IsReference("none") || IsReference("iso") {
		t.Error("IsReference: want true for \"\" and none only")
	}
	for _, c := range []struct {
		name   string
		params Params
		want   string
	}{
		{"none", nil, "none"}, {"", nil, "none"}, {"none", Params{"dcor_alpha": 0.1}, "dcor"}, {"iso", Params{"iso_t": 1}, "iso"},
	} {
		if got := Describe(c.name, c.params).Method; got != c.want {
			t.Errorf("Describe(%q, %v).Method = %q, want %q", c.name, c.params, got, c.want)
		}
	}
	newNone := func(Params) (Protector, error) { return None{}, nil }
	for _, c := range []struct {
		name string
		spec Spec
		want string
	}{
		{"second", Spec{Name: "test_ref2", New: newNone, Color: 0x010203, Reference: true}, `"none" and "test_ref2" both registered`},
		{"with a parameter", Spec{Name: "test_ref_p", New: newNone, Color: 0x010204, Reference: true,
			Params: []Param{{Key: "test_ref_p_x", Min: 0, Max: 1}}}, "without parameters"},
		{"add-on", Spec{Name: "test_ref_a", Role: AddOn, NewLoss: func(Params) (LossTerm, error) { return nil, nil }, Color: 0x010205, Reference: true,
			Params: []Param{{Key: "test_ref_a_x", Min: 0, Max: 1}}}, "must be a gradient protection"},
	} {
		wantRefused(t, c.name, c.spec, c.want)
	}
	if got := Reference(); got != "none" {
		t.Errorf("after the refusals Reference() = %q, want none", got)
	}
	g := tensor.New(2, 2)
	copy(g.Data, []float32{1, -2, 3, 0.5})
	pr, err := New(Reference(), nil)
	if err != nil {
		t.Fatal(err)
	}
	out := tensor.New(0, 0)
	if _, err := pr.Protect(&Batch{Grad: g, Labels: []float32{1, 0}, Probs: []float32{0.5, 0.5}}, out, rand.New(rand.NewPCG(1, 2))); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(out.Data, []float32{1, -2, 3, 0.5}) {
		t.Errorf("the reference changed the gradient: %v, want [1 -2 3 0.5]", out.Data)
	}
}

// wantRefused checks that Register panics on spec with a message holding
// want (case name) and leaves the registry without it.
func wantRefused(t *testing.T, name string, spec Spec, want string) {
	t.Helper()
	func() {
		defer func() {
			r := recover()
			if msg, _ := r.(string); !strings.Contains(msg, want) {
				t.Errorf("%s: Register panicked with %v, want %q", name, r, want)
			}
		}()
		Register(spec)
	}()
	if _, ok := Lookup(spec.Name); ok {
		t.Errorf("%s: %q entered the registry", name, spec.Name)
	}
}
