package report

import (
	"fmt"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/splitguard/splitguard/report/theme"
)

// progressFigure draws the per-batch leak AUC of key over training, one
// smoothed line per setting (a single run also shows its thinned raw
// points and its q95).
func progressFigure(gs []*group, dataset, key string, single bool) (*plot.Plot, int, error) {
	attack, layer := splitKey(key)
	title := fmt.Sprintf("Leak AUC per batch — %s attack, %s layer", attack, layer)
	if dataset != "" && !single {
		title += " (" + dataset + ")"
	}
	p := newPlot(title, "training step (batch)", "leak AUC (per batch)")
	n := 0
	for _, g := range gs {
		if g.Setting.Dataset != dataset {
			continue
		}
		var curves [][2][]float64
		for _, r := range g.Runs {
			xs, ys := leakSeries(r, key)
			if len(xs) > 0 {
				curves = append(curves, [2][]float64{xs, ys})
			}
		}
		if len(curves) == 0 {
			continue
		}
		if single {
			xs, ys := curves[0][0], curves[0][1]
			stride := (len(xs) + maxPoints - 1) / maxPoints
			var tx, ty []float64
			for i := 0; i < len(xs); i += stride {
				tx, ty = append(tx, xs[i]), append(ty, ys[i])
			}
			s, err := plotter.NewScatter(xys(tx, ty))
			if err != nil {
				return nil, 0, err
			}
			s.GlyphStyle.Color = rawColor
			s.GlyphStyle.Radius = vg.Points(1)
			s.GlyphStyle.Shape = draw.CircleGlyph{}
			p.Add(s)
			lbl := "each batch"
			if stride > 1 {
				lbl = fmt.Sprintf("every %d-th batch", stride)
			}
			p.Legend.Add(lbl, s)
		}
		bx, by := averageCurves(curves, maxBins)
		l, err := line(p, bx, by, g.Color, 1.6, false)
		if err != nil {
			return nil, 0, err
		}
		lbl := g.Setting.Label()
		if single {
			lbl = fmt.Sprintf("mean of %d-step bins", binWidth(curves[0][0]))
		} else if len(curves) > 1 {
			lbl += fmt.Sprintf(" (%d seeds)", len(curves))
		}
		p.Legend.Add(lbl, l)
		if single && g.Runs[0].Summary != nil {
			if st, ok := g.Runs[0].Summary.Leak[key]; ok && st.Q95 != nil {
				q := *st.Q95
				f := plotter.NewFunction(func(float64) float64 { return q })
				f.Color = theme.MethodColor("label_dp")
				f.Width = vg.Points(1)
				f.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
				p.Add(f)
				p.Legend.Add(fmt.Sprintf("q95 = %.3f", q), f)
			}
		}
		n++
	}
	if n == 0 {
		return nil, 0, nil
	}
	refLine(p, 0.5)
	clampAUCAxis(p)
	return p, n, nil
}

// progressSection draws one per-batch leak figure per dataset and leak
// key.
func (b *builder) progressSection() (*Section, error) {
	prog := &Section{ID: "progress", Title: "Leak AUC over training",
		Lead: fmt.Sprintf("Per-batch leak AUC of the gradient (or embedding) the passive party sees, smoothed as the mean of up to %d equal-width bins of steps; "+
			"seeds of one setting are averaged. 0.5 (dotted) is chance; values below 0.5 are reported as they are (no flip).", maxBins)}
	for _, d := range b.ds {
		for _, k := range b.keys {
			p, n, err := progressFigure(b.gs, d, k, b.single)
			if err != nil {
				return nil, err
			}
			if p == nil {
				continue
			}
			caption := k
			if b.multiDS {
				caption = d + ", " + k
			}
			if !b.single {
				caption += fmt.Sprintf(" — %d settings", n)
			}
			if err := addFig(prog, "leak_"+slug(k)+b.dsName(d), caption, [][]*plot.Plot{{p}}, 8.5*vg.Inch, 4.2*vg.Inch, true); err != nil {
				return nil, err
			}
		}
	}
	if len(prog.Figures) == 0 {
		prog.Empty = "No per-batch leak AUC found (batches.jsonl missing, empty, or every batch of one class)."
	}
	return prog, nil
}
