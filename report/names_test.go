package report

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/splitguard/splitguard/protect"
	"github.com/splitguard/splitguard/report/theme"
)

// TestModelAttacks checks that the utility figure's model attacks come
// from eval.jsonl's keys: AUC keys only, tuned attackers left out, ranked
// attacks (norm) first, the others by name, of the figure's dataset only.
func TestModelAttacks(t *testing.T) {
	run := func(ds string, keys ...string) *group {
		e := Eval{Attacks: map[string]float64{}}
		for _, k := range keys {
			e.Attacks[k] = 0.6
		}
		return &group{Setting: Setting{Dataset: ds}, Runs: []*Run{{Evals: []Eval{{}, e}}}}
	}
	for _, c := range []struct {
		name string
		gs   []*group
		want []string
	}{
		{"none", []*group{run("a")}, nil},
		{"completion", []*group{run("a", "completion_supervised/auc", "completion/auc", "completion/accuracy", "completion_tuned/auc", "completion/prior")},
			[]string{"completion", "completion_supervised"}},
		{"ranked first", []*group{run("a", "zz/auc", "norm/auc"), run("a", "completion/auc")}, []string{"norm", "completion", "zz"}},
		{"other dataset", []*group{run("b", "completion/auc"), run("a", "completion_supervised/auc")}, []string{"completion_supervised"}},
	} {
		if got := modelAttacks(c.gs, "a"); !slices.Equal(got, c.want) {
			t.Errorf("%s: modelAttacks = %q, want %q", c.name, got, c.want)
		}
	}
}

// TestGroupsFromRegistry checks the order and colours of the settings: by
// the defences' rank (protect.Spec.Rank), unranked ones and combinations
// after by name, each setting in its defence's colour, shaded by
// parameter; a combination gets a colour of its own.
func TestGroupsFromRegistry(t *testing.T) {
	set := func(method string, v float64) *Run {
		return &Run{Setting: Setting{Dataset: "d", Method: method, Value: v, Param: fmt.Sprintf("p=%g", v)}}
	}
	runs := []*Run{set("sparsify", 1), set("marvell+dcor", 1), set("fedpass_passive", 1), set("marvell", 4), set("marvell", 1),
		set("none", math.NaN()), set("label_dp", 1), set("iso", 1)}
	gs := groups(runs)
	var got []string
	for _, g := range gs {
		got = append(got, g.Setting.Method)
	}
	want := []string{"none", "iso", "marvell", "marvell", "label_dp", "fedpass_passive", "marvell+dcor", "sparsify"}
	if !slices.Equal(got, want) {
		t.Fatalf("groups' methods = %q, want %q", got, want)
	}
	for _, g := range gs {
		spec, ok := protect.Lookup(g.Setting.Method)
		switch {
		case !ok:
			if g.Color.A != 0xff {
				t.Errorf("%s: colour %v, want an opaque one", g.Setting.Method, g.Color)
			}
		case g.Setting.Method == "marvell" && g.Setting.Value == 1:
			if want := theme.Shade(theme.RGB(spec.Color), 0, 2); g.Color != want || g.Color == theme.RGB(spec.Color) {
				t.Errorf("marvell's weaker setting: colour %s, want the lighter shade %s", theme.Hex(g.Color), theme.Hex(want))
			}
		case g.Color != theme.RGB(spec.Color):
			t.Errorf("%s: colour %s, want its spec's %s", g.Setting.Method, theme.Hex(g.Color), theme.Hex(theme.RGB(spec.Color)))
		}
	}
}
