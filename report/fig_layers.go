package report

import (
	"fmt"
	"image/color"
	"math"
	"sort"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/splitguard/splitguard/report/theme"
)

// layersFigure draws q95 leak AUC per passive layer: one panel per attack,
// one line per setting (a single run: one line per attack in one panel).
func layersFigure(gs []*group, dataset string, keys []string, single bool) ([][]*plot.Plot, error) {
	attacks := map[string][]string{} // attack → layers
	var attackOrder []string
	for _, k := range keys {
		a, l := splitKey(k)
		if _, ok := attacks[a]; !ok {
			attackOrder = append(attackOrder, a)
		}
		attacks[a] = append(attacks[a], l)
	}
	sort.Strings(attackOrder)
	// only attacks seen at two layers or more make a per-layer figure
	var use []string
	for _, a := range attackOrder {
		if len(attacks[a]) >= 2 {
			use = append(use, a)
		}
	}
	if len(use) == 0 {
		return nil, nil
	}
	// x positions: rank of each layer among all layers seen
	layerSet := map[string]bool{}
	for _, a := range use {
		for _, l := range attacks[a] {
			layerSet[l] = true
		}
	}
	layers := make([]string, 0, len(layerSet))
	for l := range layerSet {
		layers = append(layers, l)
	}
	sort.Slice(layers, func(i, j int) bool { return layerRank(layers[i]) < layerRank(layers[j]) })
	pos := map[string]float64{}
	var ticks []plot.Tick
	for i, l := range layers {
		pos[l] = float64(i + 1)
		ticks = append(ticks, plot.Tick{Value: float64(i + 1), Label: l})
	}
	setup := func(title string) *plot.Plot {
		p := newPlot(title, "passive layer (input → cut)", "q95 leak AUC")
		p.X.Tick.Marker = plot.ConstantTicks(ticks)
		p.X.Min, p.X.Max = 0.7, float64(len(layers))+0.3
		return p
	}
	addLine := func(p *plot.Plot, lbl string, c color.RGBA, get func(l string) *float64, ls []string, legend bool) error {
		sort.Slice(ls, func(i, j int) bool { return layerRank(ls[i]) < layerRank(ls[j]) })
		var xs, ys []float64
		for _, l := range ls {
			if v := get(l); v != nil && !math.IsNaN(*v) {
				xs, ys = append(xs, pos[l]), append(ys, *v)
			}
		}
		if len(xs) == 0 {
			return nil
		}
		l, err := line(p, xs, ys, c, 1.5, false)
		if err != nil {
			return err
		}
		s, err := plotter.NewScatter(xys(xs, ys))
		if err != nil {
			return err
		}
		s.GlyphStyle.Color, s.GlyphStyle.Radius, s.GlyphStyle.Shape = c, vg.Points(2.5), draw.CircleGlyph{}
		p.Add(s)
		if legend {
			p.Legend.Add(lbl, l, s)
		}
		return nil
	}
	if single {
		g := gs[0]
		r := g.Runs[0]
		if r.Summary == nil {
			return nil, nil
		}
		p := setup("Leakage per passive layer")
		palette := theme.Series
		for i, a := range use {
			err := addLine(p, a, palette[i%len(palette)], func(l string) *float64 {
				if st, ok := r.Summary.Leak[a+"/"+l]; ok {
					return st.Q95
				}
				return nil
			}, append([]string(nil), attacks[a]...), true)
			if err != nil {
				return nil, err
			}
		}
		refLine(p, 0.5)
		clampAUCAxis(p)
		return [][]*plot.Plot{{p}}, nil
	}
	cols := min(len(use), 2)
	rows := (len(use) + cols - 1) / cols
	grid := make([][]*plot.Plot, rows)
	for i := range grid {
		grid[i] = make([]*plot.Plot, cols)
	}
	for i, a := range use {
		p := setup(fmt.Sprintf("Leakage per layer — %s attack", a))
		for _, g := range gs {
			if g.Setting.Dataset != dataset {
				continue
			}
			key := func(l string) *float64 {
				v, ok := stat(g.Runs, leakStat(a+"/"+l, false))
				if !ok {
					return nil
				}
				return &v
			}
			if err := addLine(p, g.Setting.Label(), g.Color, key, append([]string(nil), attacks[a]...), i == cols-1); err != nil {
				return nil, err
			}
		}
		refLine(p, 0.5)
		clampAUCAxis(p)
		grid[i/cols][i%cols] = p
	}
	return grid, nil
}

// layersSection draws one per-layer figure per dataset.
func (b *builder) layersSection() (*Section, error) {
	lay := &Section{ID: "layers", Title: "Leakage per passive layer",
		Lead: "q95 over training batches of the leak AUC at each observable passive layer, from the input side (first) to the cut. " +
			"Attacks audited at only one layer are left out."}
	for _, d := range b.ds {
		grid, err := layersFigure(b.gs, d, b.keys, b.single)
		if err != nil {
			return nil, err
		}
		if grid == nil {
			continue
		}
		h := 4.2 * vg.Inch * vg.Length(len(grid))
		w := 8.5 * vg.Inch
		if len(grid[0]) > 1 {
			w = 12 * vg.Inch
			h = 3.8 * vg.Inch * vg.Length(len(grid))
		}
		caption := "q95 leak AUC per layer"
		if b.multiDS {
			caption = d + ", " + caption
		}
		notes := []string{q95Note}
		if !b.single { // a lone run's legend names attacks, not settings
			notes = append(notes, symbolNotes(b.gs, d)...)
		}
		if err := addFig(lay, "layers"+b.dsName(d), caption, grid, w, h, true, notes...); err != nil {
			return nil, err
		}
	}
	if len(lay.Figures) == 0 {
		lay.Empty = "No attack was audited at more than one passive layer (audit earlier layers with the attacks that support them, e.g. norm, cosine, spectral)."
	}
	return lay, nil
}
