package report

import (
	"image/color"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/splitguard/splitguard/attack"
	"github.com/splitguard/splitguard/protect"
	"github.com/splitguard/splitguard/report/theme"
)

// group is the runs of one setting.
type group struct {
	Setting Setting
	Runs    []*Run
	Color   color.RGBA
}

// methodColor returns a method's colour: its defence's own (protect.Spec's
// Color) or, for a method no defence registers (a combination such as
// "marvell+dcor"), a stable one of its own.
func methodColor(method string) color.RGBA {
	return theme.PaletteOf(protect.Colors()).Color(method)
}

// groups splits the runs into settings, ordered by dataset, method (by its
// defence's rank, protect.Rank, then by name) and parameter, each with its
// colour (the method's hue, shaded by parameter rank).
func groups(runs []*Run) []*group {
	by := map[string]*group{}
	var out []*group
	for _, r := range runs {
		k := r.Setting.key()
		g := by[k]
		if g == nil {
			g = &group{Setting: r.Setting}
			by[k] = g
			out = append(out, g)
		}
		g.Runs = append(g.Runs, r)
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i].Setting, out[j].Setting
		if a.Dataset != b.Dataset {
			return a.Dataset < b.Dataset
		}
		if a.Method != b.Method {
			if ra, rb := protect.Rank(a.Method), protect.Rank(b.Method); ra != rb {
				return ra < rb
			}
			return a.Method < b.Method
		}
		if a.Value != b.Value && !math.IsNaN(a.Value) && !math.IsNaN(b.Value) {
			return a.Value < b.Value
		}
		return a.Param < b.Param
	})
	// shade within (dataset, method)
	for i := 0; i < len(out); {
		j := i
		for j < len(out) && out[j].Setting.Dataset == out[i].Setting.Dataset && out[j].Setting.Method == out[i].Setting.Method {
			j++
		}
		for k := i; k < j; k++ {
			out[k].Color = theme.Shade(methodColor(out[i].Setting.Method), k-i, j-i)
		}
		i = j
	}
	return out
}

func datasets(gs []*group) []string {
	var ds []string
	seen := map[string]bool{}
	for _, g := range gs {
		if !seen[g.Setting.Dataset] {
			seen[g.Setting.Dataset] = true
			ds = append(ds, g.Setting.Dataset)
		}
	}
	return ds
}

// layerRank orders layer names: first, 2, 3, …, cut.
func layerRank(layer string) int {
	switch layer {
	case "first":
		return 1
	case "cut":
		return 1 << 20
	}
	if n, err := strconv.Atoi(layer); err == nil {
		return n
	}
	return 1 << 19
}

func splitKey(k string) (at, layer string) {
	if i := strings.LastIndexByte(k, '/'); i >= 0 {
		return k[:i], k[i+1:]
	}
	return k, ""
}

// leakKeys returns every leak key seen in the runs' summaries and batches,
// cut-layer keys first, then by layer and attack (by attack.Rank, then by
// name).
func leakKeys(runs []*Run) []string {
	seen := map[string]bool{}
	for _, r := range runs {
		if r.Summary != nil {
			for k := range r.Summary.Leak {
				seen[k] = true
			}
		}
		for i, b := range r.Batches {
			if i > 50 {
				break
			}
			for k := range b.Leak {
				seen[k] = true
			}
		}
	}
	keys := make([]string, 0, len(seen))
	for k := range seen {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		ai, li := splitKey(keys[i])
		aj, lj := splitKey(keys[j])
		ci, cj := li == "cut", lj == "cut"
		if ci != cj {
			return ci
		}
		if li != lj {
			return layerRank(li) < layerRank(lj)
		}
		if ri, rj := attack.Rank(ai), attack.Rank(aj); ri != rj { // the papers' main attack first
			return ri < rj
		}
		return ai < aj
	})
	return keys
}

func slug(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-' || r == '.':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	return b.String()
}
