package protect

import (
	"math"
	"testing"

	"github.com/splitguard/splitguard/report/theme"
)

// TestEveryDefenceHasItsColour walks the registry: every defence has an
// opaque colour of its own, and the palette is legible and distinct.
func TestEveryDefenceHasItsColour(t *testing.T) {
	colors := Colors()
	specs := Specs()
	if len(colors) != len(specs) {
		t.Fatalf("Colors() has %d entries, the registry %d specs", len(colors), len(specs))
	}
	for _, s := range specs {
		if c, ok := colors[s.Name]; !ok || c != s.Color || c == 0 || c > 0xffffff {
			t.Errorf("%s: Colors()[%q] = %#x, %v; want its spec's colour %#x", s.Name, s.Name, c, ok, s.Color)
		}
	}
	if err := theme.PaletteOf(colors).Check(); err != nil {
		t.Errorf("the registry's palette:\n%v", err)
	}
}

// TestRegisterRefusesColour checks that a spec without a colour, or with
// another defence's, is refused before it enters the registry.
func TestRegisterRefusesColour(t *testing.T) {
	newNone := func(Params) (Protector, error) { return None{}, nil }
	for _, c := range []struct {
		name string
		spec Spec
		want string
	}{
		{"no colour", Spec{Name: "test_no_colour", New: newNone}, "without a Color 0xrrggbb"},
		{"beyond 24 bits", Spec{Name: "test_wide", New: newNone, Color: 0x1000000}, "without a Color 0xrrggbb (got 0x1000000)"},
		{"marvell's", Spec{Name: "test_taken", New: newNone, Color: 0x0072b2}, `colour 0x0072b2 is "marvell"'s`},
	} {
		wantRefused(t, c.name, c.spec, c.want)
	}
}

func TestRank(t *testing.T) {
	for _, c := range []struct {
		method string
		want   int
	}{
		{"none", 1}, {"iso", 2}, {"max_norm", 3}, {"max_norm_label", 4}, {"marvell", 5}, {"dcor", 6}, {"label_dp", 7},
		{"sparsify", math.MaxInt}, {"fedpass_passive", math.MaxInt}, {"marvell+dcor", math.MaxInt}, {"no_such", math.MaxInt},
	} {
		if got := Rank(c.method); got != c.want {
			t.Errorf("Rank(%q) = %d, want %d", c.method, got, c.want)
		}
	}
}
