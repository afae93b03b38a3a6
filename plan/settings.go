package plan

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/splitguard/splitguard/config"
	"github.com/splitguard/splitguard/protect"
)

// DefaultGrid is the number of strengths tried per defence when
// Options.Grid is 0.
const DefaultGrid = 4

// Setting is one point of the search: a gradient protection and the
// defence parameters (of it, or of the add-on it turns on).
type Setting struct {
	// Protect is the gradient protection's name ("none" for an add-on or
	// no defence).
	Protect string
	// Params are the defence parameters, keyed by config key.
	Params protect.Params
}

// Reference is the setting every cost is measured against: no defence.
var Reference = Setting{Protect: protect.Reference()}

// ParamsText renders the parameters as "key=value;key=value", sorted by
// key, with the shortest decimal that reads back to the same float64.
func (s Setting) ParamsText() string {
	keys := slices.Sorted(maps.Keys(s.Params))
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + strconv.FormatFloat(s.Params[k], 'g', -1, 64)
	}
	return strings.Join(parts, ";")
}

// Key identifies the setting in plan.csv: the protection and the
// parameters ("marvell marvell_s=1").
func (s Setting) Key() string { return strings.TrimSpace(s.Protect + " " + s.ParamsText()) }

// Legend is how tables and the figure name the setting.
func (s Setting) Legend() protect.Legend { return protect.Describe(s.Protect, s.Params) }

// parseParams reads ParamsText's form back.
func parseParams(text string) (protect.Params, error) {
	p := protect.Params{}
	if text == "" {
		return p, nil
	}
	for part := range strings.SplitSeq(text, ";") {
		k, v, ok := strings.Cut(part, "=")
		x, err := strconv.ParseFloat(v, 64)
		if !ok || k == "" || err != nil {
			return nil, fmt.Errorf("parameter %q is not KEY=NUMBER", part)
		}
		p[k] = x
	}
	return p, nil
}

// Settings returns the settings of the search in the order it tries
// them: the Reference first, then, for every registered defence (protect's
// registry; only those named in only, when only is not empty), grid
// strengths of its first parameter (the one its legend's strength
// follows) with its other parameters at the registry's representative
// setting (protect.BenchParams), visited coarse to fine: every defence at
// its middle strength, then at the ends of its range, then between. A
// defence without parameters is one setting. Strengths that protect.Check
// refuses are left out; so are duplicates.
func Settings(grid int, only []string) ([]Setting, error) {
	if grid <= 0 {
		grid = DefaultGrid
	}
	for _, n := range only {
		if _, ok := protect.Lookup(n); !ok {
			return nil, config.Keyed(fmt.Errorf("unknown defence %q (key defences; have %s)", n, strings.Join(append(protect.Names(), protect.AddOnNames()...), ", ")), "defences")
		}
	}
	var lists [][]Setting
	for _, spec := range protect.Specs() {
		if spec.Name == Reference.Protect || (len(only) > 0 && !slices.Contains(only, spec.Name)) {
			continue
		}
		name := spec.Name
		if spec.Role == protect.AddOn {
			name = Reference.Protect
		}
		base := protect.BenchParams(spec)
		if len(spec.Params) == 0 {
			lists = append(lists, []Setting{{Protect: name, Params: protect.Params{}}})
			continue
		}
		first := spec.Params[0]
		var list []Setting
		for _, v := range coarseToFine(strengths(first, base, grid)) {
			p := maps.Clone(base)
			if p == nil {
				p = protect.Params{}
			}
			p[first.Key] = v
			if protect.Check(name, p) != nil {
				continue
			}
			list = append(list, Setting{Protect: name, Params: p})
		}
		lists = append(lists, list)
	}
	out := []Setting{{Protect: Reference.Protect, Params: protect.Params{}}}
	seen := map[string]bool{out[0].Key(): true}
	for r := 0; ; r++ {
		added := false
		for _, l := range lists {
			if r < len(l) {
				added = true
				if k := l[r].Key(); !seen[k] {
					seen[k] = true
					out = append(out, l[r])
				}
			}
		}
		if !added {
			return out, nil
		}
	}
}

// strengths returns n log-spaced values of p, ascending (n = 1: the
// geometric middle): over [b/100, 10·b] clipped to p's range, b being the representative setting's value
// of p (1 when it has none or 1 is out of range; then the range's lower
// end if that is positive), open ends moved 1% inward, rounded for a whole
// number parameter (duplicates dropped).
func strengths(p protect.Param, base protect.Params, n int) []float64 {
	b, ok := base[p.Key]
	if !ok || b <= 0 {
		b = 1
		if p.Check(b) != nil && p.Min > 0 && !math.IsInf(p.Min, 0) {
			b = p.Min
		}
	}
	lo, hi := b/100, 10*b
	if p.Min > lo {
		lo = p.Min
	}
	if p.Max < hi {
		hi = p.Max
	}
	if lo > hi {
		lo = hi
	}
	span := hi - lo
	if p.MinOpen && lo == p.Min {
		lo += 0.01 * span
	}
	if p.MaxOpen && hi == p.Max {
		hi -= 0.01 * span
	}
	var out []float64
	for i := range n {
		v := lo
		if n == 1 && lo > 0 {
			v = math.Sqrt(lo * hi) // the geometric middle
		} else if n > 1 && lo > 0 {
			v = lo * math.Pow(hi/lo, float64(i)/float64(n-1))
		} else if n > 1 {
			v = lo + (hi-lo)*float64(i)/float64(n-1)
		}
		if p.Int {
			v = math.Round(v)
		} else {
			v, _ = strconv.ParseFloat(strconv.FormatFloat(v, 'g', 3, 64), 64)
		}
		if p.Check(v) != nil || (len(out) > 0 && out[len(out)-1] == v) {
			continue
		}
		out = append(out, v)
	}
	return out
}

// coarseToFine reorders an ascending list: the middle, the two ends, then
// the middles of the gaps, breadth first.
func coarseToFine(vs []float64) []float64 {
	n := len(vs)
	if n <= 1 {
		return vs
	}
	var out []float64
	done := make([]bool, n)
	emit := func(i int) {
		if !done[i] {
			done[i] = true
			out = append(out, vs[i])
		}
	}
	mid := (n - 1) / 2
	emit(mid)
	emit(0)
	emit(n - 1)
	type gap struct{ lo, hi int }
	queue := []gap{{0, mid}, {mid, n - 1}}
	for len(queue) > 0 {
		g := queue[0]
		queue = queue[1:]
		if g.hi-g.lo < 2 {
			continue
		}
		m := (g.lo + g.hi) / 2
		emit(m)
		queue = append(queue, gap{g.lo, m}, gap{m, g.hi})
	}
	return out
}
