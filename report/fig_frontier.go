package report

import (
	"fmt"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// FrontierPoint is one setting of a plan (package plan) on the frontier
// figure: its method (the colour's key, protect.Legend.Method), its
// strongest attack's leak (x) and its validation AUC (y).
type FrontierPoint struct {
	Method string
	Leak   float64
	ValAUC float64
}

// FrontierFigure draws the validation AUC of every setting a plan tried
// against its strongest attack's leak, one colour per method, the leak
// limit as a vertical dashed line and the recommended setting (index rec
// into pts; negative: none) circled. It returns the figure as PNG and SVG;
// points with a non-finite coordinate are left out.
func FrontierFigure(pts []FrontierPoint, limit float64, rec int, xlabel string) (pngB, svgB []byte, err error) {
	p := newPlot("validation AUC vs the strongest attack's leak", xlabel, "validation AUC (selected model)")
	byMethod := map[string]plotter.XYs{}
	ylo, yhi := 0.45, 0.55
	var order []string
	for _, q := range pts {
		if math.IsNaN(q.Leak) || math.IsInf(q.Leak, 0) || math.IsNaN(q.ValAUC) || math.IsInf(q.ValAUC, 0) {
			continue
		}
		if _, ok := byMethod[q.Method]; !ok {
			order = append(order, q.Method)
		}
		byMethod[q.Method] = append(byMethod[q.Method], plotter.XY{X: q.Leak, Y: q.ValAUC})
		ylo, yhi = math.Min(ylo, q.ValAUC), math.Max(yhi, q.ValAUC)
	}
	for _, m := range order {
		s, err := plotter.NewScatter(byMethod[m])
		if err != nil {
			return nil, nil, fmt.Errorf("report: frontier: %w", err)
		}
		s.GlyphStyle.Color = methodColor(m)
		s.GlyphStyle.Radius = vg.Points(3)
		s.GlyphStyle.Shape = draw.CircleGlyph{}
		p.Add(s)
		p.Legend.Add(m, s)
	}
	if rec >= 0 && rec < len(pts) {
		q := pts[rec]
		if !math.IsNaN(q.Leak) && !math.IsNaN(q.ValAUC) {
			s, err := plotter.NewScatter(plotter.XYs{{X: q.Leak, Y: q.ValAUC}})
			if err != nil {
				return nil, nil, fmt.Errorf("report: frontier: %w", err)
			}
			s.GlyphStyle.Color = noteColor
			s.GlyphStyle.Radius = vg.Points(7)
			s.GlyphStyle.Shape = draw.RingGlyph{}
			p.Add(s)
			p.Legend.Add("recommended", s)
		}
	}
	if !math.IsNaN(limit) && !math.IsInf(limit, 0) {
		l, err := plotter.NewLine(plotter.XYs{{X: limit, Y: ylo}, {X: limit, Y: yhi}})
		if err != nil {
			return nil, nil, fmt.Errorf("report: frontier: %w", err)
		}
		l.Color = refColor
		l.Width = vg.Points(1)
		l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		p.Add(l)
		p.Legend.Add(fmt.Sprintf("leak limit %g", limit), l)
	}
	padAxes(p)
	clampAUCAxis(p)
	p.X.Min = math.Max(0, p.X.Min)
	if !math.IsNaN(limit) && !math.IsInf(limit, 0) {
		p.X.Min, p.X.Max = math.Min(p.X.Min, limit), math.Max(p.X.Max, limit*1.05)
	}
	return render([][]*plot.Plot{{p}}, 7*vg.Inch, 4.5*vg.Inch, true, nil)
}
