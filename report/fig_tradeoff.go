package report

import (
	"fmt"
	"image/color"
	"sort"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// tradeoffFigure draws, for the leak key, leak (q95 |AUC−0.5| and raw q95)
// against the kept model's test AUC and test loss (Summary.MainAUC): one curve per method, points
// labelled with the parameter where the label covers nothing (see
// pointLabels), and one legend beside the top right panel. It returns the
// panels, the number of settings and each panel's labeller.
func tradeoffFigure(gs []*group, dataset, key string) ([][]*plot.Plot, int, []*pointLabels, error) {
	attack, layer := splitKey(key)
	type axis struct {
		name string
		f    func(*Summary) *float64
	}
	xsAx := []axis{
		{fmt.Sprintf("q95 |leak AUC − 0.5| (%s, %s layer)", attack, layer), leakStat(key, true)},
		{fmt.Sprintf("q95 leak AUC (%s, %s layer)", attack, layer), leakStat(key, false)},
	}
	ysAx := []axis{
		{"test AUC (selected model)", (*Summary).MainAUC},
		{"test loss (BCE, selected model)", (*Summary).MainLoss},
	}
	grid := make([][]*plot.Plot, 2)
	points := 0
	var all []*pointLabels
	for i, ya := range ysAx {
		grid[i] = make([]*plot.Plot, 2)
		for j, xa := range xsAx {
			p := newPlot(fmt.Sprintf("%s vs leakage", ya.name), xa.name, ya.name)
			labels := &pointLabels{Style: p.X.Tick.Label, Radius: vg.Points(3)}
			labels.Style.Font.Size = vg.Points(8)
			// one curve per method
			type pt struct {
				x, y, v float64
				lbl     string
			}
			byMethod := map[string][]pt{}
			var order []string
			colors := map[string]color.RGBA{}
			for _, g := range gs {
				if g.Setting.Dataset != dataset {
					continue
				}
				x, ok1 := stat(g.Runs, xa.f)
				y, ok2 := stat(g.Runs, ya.f)
				if !ok1 || !ok2 {
					continue
				}
				m := g.Setting.Method
				if _, ok := byMethod[m]; !ok {
					order = append(order, m)
					colors[m] = methodColor(m)
				}
				byMethod[m] = append(byMethod[m], pt{x, y, g.Setting.Value, g.Setting.Param})
			}
			for _, m := range order {
				pts := byMethod[m]
				sort.SliceStable(pts, func(a, b int) bool { return pts[a].v < pts[b].v })
				var xs, ys []float64
				var lbls []string
				for _, q := range pts {
					xs, ys, lbls = append(xs, q.x), append(ys, q.y), append(lbls, q.lbl)
				}
				c := colors[m]
				var thumbs []plot.Thumbnailer
				if len(pts) > 1 {
					l, err := line(p, xs, ys, c, 1.3, false)
					if err != nil {
						return nil, 0, nil, err
					}
					thumbs = append(thumbs, l)
				}
				s, err := plotter.NewScatter(xys(xs, ys))
				if err != nil {
					return nil, 0, nil, err
				}
				s.GlyphStyle.Color = c
				s.GlyphStyle.Radius = vg.Points(3)
				s.GlyphStyle.Shape = draw.CircleGlyph{}
				p.Add(s)
				thumbs = append(thumbs, s)
				for k := range xs {
					labels.Points = append(labels.Points, labelledPoint{X: xs[k], Y: ys[k], Text: lbls[k], Color: c})
					if k > 0 {
						labels.Segments = append(labels.Segments, [4]float64{xs[k-1], ys[k-1], xs[k], ys[k]})
					}
				}
				if i == 0 && j == 1 { // one legend for the figure: the colours are the same in every panel
					p.Legend.Add(m, thumbs...)
				}
				if i == 0 && j == 0 {
					points += len(pts)
				}
			}
			p.Add(labels)
			all = append(all, labels)
			padAxes(p)
			grid[i][j] = p
		}
	}
	if points == 0 {
		return nil, 0, nil, nil
	}
	return grid, points, all, nil
}

// tradeoffSection draws one trade-off figure per dataset and cut-layer
// leak key.
func (b *builder) tradeoffSection() (*Section, error) {
	trade := &Section{ID: "tradeoff", Title: "Privacy–utility trade-off",
		Lead: "Each point is one protection setting (mean over seeds), labelled with its parameter; one curve per method. " +
			"Left: q95 over training batches of |leak AUC − 0.5| (the papers' tables); right: raw q95 leak AUC (their figures). " +
			"Top: test AUC of the model kept, selected on validation (higher is better); bottom: its test loss."}
	for _, d := range b.ds {
		for _, k := range b.cutKeys {
			grid, n, _, err := tradeoffFigure(b.gs, d, k)
			if err != nil {
				return nil, err
			}
			if grid == nil {
				continue
			}
			caption := fmt.Sprintf("%s — %d settings", k, n)
			if b.multiDS {
				caption = d + ", " + caption
			}
			if err := addFig(trade, "tradeoff_"+slug(k)+b.dsName(d), caption, grid, 11*vg.Inch, 7.5*vg.Inch, true, append([]string{q95Note}, symbolNotes(b.gs, d)...)...); err != nil {
				return nil, err
			}
		}
	}
	if len(trade.Figures) == 0 {
		trade.Empty = "No run has both a summary with a cut-layer leak figure and a test AUC yet."
	}
	return trade, nil
}
