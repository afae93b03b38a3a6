package report

import (
	"fmt"
	"image/color"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/splitguard/splitguard/protect"
	"github.com/splitguard/splitguard/report/theme"
)

// progressFigure draws the per-batch leak AUC of key over training. A
// single run gets one panel: its batches as faint points, their moving
// mean and the run's q95. A sweep gets small multiples, one panel per
// method on a shared y axis: each setting's per-step leak (seeds averaged)
// as a faint line under its moving mean, and the unprotected setting's
// moving mean as a grey dashed reference in the other panels. It returns
// the panels and the number of settings drawn.
func progressFigure(gs []*group, dataset, key string, single bool) ([][]*plot.Plot, int, error) {
	attack, layer := splitKey(key)
	ylabel := fmt.Sprintf("leak AUC per batch (%s, %s layer)", attack, layer)
	if single {
		p, err := progressSingle(gs[0], key, ylabel)
		if p == nil || err != nil {
			return nil, 0, err
		}
		return [][]*plot.Plot{{p}}, 1, nil
	}
	type panel struct {
		method string
		gs     []*group
		curves [][][2][]float64 // per group, per seed
	}
	var panels []*panel
	var ref *group // the unprotected setting
	var refCurves [][2][]float64
	for _, g := range gs {
		if g.Setting.Dataset != dataset {
			continue
		}
		curves := leakCurves(g, key)
		if len(curves) == 0 {
			continue
		}
		if protect.IsReference(g.Setting.Method) && ref == nil {
			ref, refCurves = g, curves
		}
		if len(panels) == 0 || panels[len(panels)-1].method != g.Setting.Method {
			panels = append(panels, &panel{method: g.Setting.Method})
		}
		pa := panels[len(panels)-1]
		pa.gs, pa.curves = append(pa.gs, g), append(pa.curves, curves)
	}
	if len(panels) == 0 {
		return nil, 0, nil
	}
	cols := min(len(panels), 3)
	grid := make([][]*plot.Plot, (len(panels)+cols-1)/cols)
	for i := range grid {
		grid[i] = make([]*plot.Plot, cols)
	}
	n := 0
	var all []*plot.Plot
	for k, pa := range panels {
		title := pa.method
		if len(panels) == 1 {
			title = fmt.Sprintf("Leak AUC per batch — %s attack, %s layer", attack, layer)
		}
		p := newPlot(title, "training step (batch)", ylabel)
		if ref != nil && !protect.IsReference(pa.method) {
			x, y, _ := smoothCurves(refCurves)
			l, err := line(p, x, y, refColor, 1.2, true)
			if err != nil {
				return nil, 0, err
			}
			p.Legend.Add(protect.Reference(), l)
		}
		for i, g := range pa.gs {
			raw := faint(g.Color)
			x, y := meanAtSteps(pa.curves[i])
			if _, err := line(p, x, y, raw, 0.6, false); err != nil {
				return nil, 0, err
			}
			x, y, _ = smoothCurves(pa.curves[i])
			l, err := line(p, x, y, g.Color, 1.8, false)
			if err != nil {
				return nil, 0, err
			}
			lbl := g.Setting.Param
			if lbl == "" {
				lbl = g.Setting.Method
			}
			if s := len(pa.curves[i]); s > 1 {
				lbl += fmt.Sprintf(" (%d seeds)", s)
			}
			p.Legend.Add(lbl, l)
			n++
		}
		refLine(p, 0.5)
		grid[k/cols][k%cols] = p
		all = append(all, p)
	}
	shareAUCAxis(all)
	return grid, n, nil
}

// leakCurves returns the per-batch leak series of key in each run of g
// that has one.
func leakCurves(g *group, key string) [][2][]float64 {
	var curves [][2][]float64
	for _, r := range g.Runs {
		if xs, ys := leakSeries(r, key); len(xs) > 0 {
			curves = append(curves, [2][]float64{xs, ys})
		}
	}
	return curves
}

// progressSingle draws a lone run's per-batch leak AUC: the batches as
// faint points (thinned to maxPoints), their moving mean and the run's
// q95.
func progressSingle(g *group, key, ylabel string) (*plot.Plot, error) {
	curves := leakCurves(g, key)
	if len(curves) == 0 {
		return nil, nil
	}
	attack, layer := splitKey(key)
	p := newPlot(fmt.Sprintf("Leak AUC per batch — %s attack, %s layer", attack, layer), "training step (batch)", ylabel)
	xs, ys := curves[0][0], curves[0][1]
	stride := (len(xs) + maxPoints - 1) / maxPoints
	var tx, ty []float64
	for i := 0; i < len(xs); i += stride {
		tx, ty = append(tx, xs[i]), append(ty, ys[i])
	}
	s, err := plotter.NewScatter(xys(tx, ty))
	if err != nil {
		return nil, err
	}
	s.GlyphStyle.Color = rawColor
	s.GlyphStyle.Radius = vg.Points(1)
	s.GlyphStyle.Shape = draw.CircleGlyph{}
	p.Add(s)
	lbl := "each batch"
	if stride > 1 {
		lbl = fmt.Sprintf("one batch in %d", stride)
	}
	p.Legend.Add(lbl, s)
	x, y, w := smoothCurves(curves[:1])
	l, err := line(p, x, y, g.Color, 1.8, false)
	if err != nil {
		return nil, err
	}
	p.Legend.Add(fmt.Sprintf("Gaussian moving mean, σ = %.0f steps", w), l)
	if sum := g.Runs[0].Summary; sum != nil {
		if st, ok := sum.Leak[key]; ok && st.Q95 != nil {
			q := *st.Q95
			f := plotter.NewFunction(func(float64) float64 { return q })
			f.Color = theme.Series[1] // the reference lines' orange
			f.Width = vg.Points(1)
			f.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
			p.Add(f)
			p.Legend.Add(fmt.Sprintf("q95 = %.3f (95th percentile over batches)", q), f)
		}
	}
	refLine(p, 0.5)
	clampAUCAxis(p)
	return p, nil
}

// faint returns c at a quarter of its opacity, for raw series under their
// smoothed curve.
func faint(c color.RGBA) color.NRGBA {
	return color.NRGBA{R: c.R, G: c.G, B: c.B, A: 0x48}
}

// shareAUCAxis gives every panel the same leak-AUC axis: the union of
// their data, with 0.5 always shown, within [0, 1].
func shareAUCAxis(ps []*plot.Plot) {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, p := range ps {
		lo, hi = math.Min(lo, p.Y.Min), math.Max(hi, p.Y.Max)
	}
	for _, p := range ps {
		p.Y.Min, p.Y.Max = lo, hi
		clampAUCAxis(p)
	}
}

// progressSection draws one per-batch leak figure per dataset and leak
// key.
func (b *builder) progressSection() (*Section, error) {
	prog := &Section{ID: "progress", Title: "Leak AUC over training",
		Lead: fmt.Sprintf("Per-batch leak AUC of the gradient (or embedding) the passive party sees: faint, each batch (seeds of one setting averaged step by step); "+
			"bold, its Gaussian moving mean with σ = %g%% of the steps. A sweep gets one panel per method on a shared axis, with the unprotected run (none) as a grey dashed reference. "+
			"0.5 (dotted) is chance; values below 0.5 are reported as they are (no flip).", 100*smoothFrac)}
	for _, d := range b.ds {
		for _, k := range b.keys {
			grid, n, err := progressFigure(b.gs, d, k, b.single)
			if err != nil {
				return nil, err
			}
			if grid == nil {
				continue
			}
			caption := k
			if b.multiDS {
				caption = d + ", " + k
			}
			if !b.single {
				caption += fmt.Sprintf(" — %d settings", n)
			}
			w, h := 8.5*vg.Inch, 4.2*vg.Inch
			if len(grid) > 1 || len(grid[0]) > 1 {
				w, h = 12*vg.Inch, 3.3*vg.Inch*vg.Length(len(grid))
			}
			var notes []string
			if !b.single {
				notes = symbolNotes(b.gs, d)
			}
			if err := addFig(prog, "leak_"+slug(k)+b.dsName(d), caption, grid, w, h, true, notes...); err != nil {
				return nil, err
			}
		}
	}
	if len(prog.Figures) == 0 {
		prog.Empty = "No per-batch leak AUC found (batches.jsonl missing, empty, or every batch of one class)."
	}
	return prog, nil
}
