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
	// LeakMin and LeakMax, when LeakMax > LeakMin, are the strongest
	// leak's range over the seeds the setting was trained with, drawn as
	// a bar through the point.
	LeakMin, LeakMax float64
	// Rejected marks a setting within the limit on one seed and not on
	// every seed (a cross).
	Rejected bool
}

// FrontierFigure draws the validation AUC of every setting a plan tried
// against its strongest attack's leak, one colour per method, the leak
// limit as a vertical dashed line and the recommended setting (index rec
// into pts; negative: none) circled, the settings trained with several
// seeds with their leak's range over the seeds as a horizontal bar and
// those rejected on a seed crossed. It returns the figure as PNG and SVG;
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
	if err := addSeedMarks(p, pts); err != nil {
		return nil, nil, err
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
			label := "recommended"
			if q.LeakMax > q.LeakMin {
				label = "recommended (within the limit on every seed)"
			}
			p.Legend.Add(label, s)
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

// addSeedMarks draws, for the points trained with several seeds, the
// range of their leak over the seeds (a bar in the method's colour) and,
// for those rejected on a seed, a cross; each once in the legend.
func addSeedMarks(p *plot.Plot, pts []FrontierPoint) error {
	finite := func(xs ...float64) bool {
		for _, x := range xs {
			if math.IsNaN(x) || math.IsInf(x, 0) {
				return false
			}
		}
		return true
	}
	var bar, cross bool
	for _, q := range pts {
		if !finite(q.Leak, q.ValAUC) {
			continue
		}
		if q.LeakMax > q.LeakMin && finite(q.LeakMin, q.LeakMax) {
			l, err := plotter.NewLine(plotter.XYs{{X: q.LeakMin, Y: q.ValAUC}, {X: q.LeakMax, Y: q.ValAUC}})
			if err != nil {
				return fmt.Errorf("report: frontier: %w", err)
			}
			l.Color = methodColor(q.Method)
			l.Width = vg.Points(1.5)
			p.Add(l)
			if !bar {
				bar = true
				key := *l // the legend's sample in a neutral colour: bars take their method's
				key.Color = refColor
				p.Legend.Add("leak over the seeds (least to largest)", &key)
			}
		}
		if q.Rejected {
			s, err := plotter.NewScatter(plotter.XYs{{X: q.Leak, Y: q.ValAUC}})
			if err != nil {
				return fmt.Errorf("report: frontier: %w", err)
			}
			s.GlyphStyle.Color = noteColor
			s.GlyphStyle.Radius = vg.Points(5)
			s.GlyphStyle.Shape = draw.CrossGlyph{}
			p.Add(s)
			if !cross {
				cross = true
				p.Legend.Add("rejected: within the limit on one seed, not on every seed", s)
			}
		}
	}
	return nil
}
