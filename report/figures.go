package report

import (
	"bytes"
	"fmt"
	"image/color"
	"math"
	"sort"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/splitguard/splitguard/report/theme"
)

// Figure is one rendered figure of the report.
type Figure struct {
	// Name is the file stem: the figure is written as Name.png and Name.svg.
	Name string
	// Caption explains what the figure shows.
	Caption string
	PNG     []byte
	SVG     []byte
	// Wide figures (grids of panels) span the page's width.
	Wide bool
}

const (
	maxBins   = 200  // points of a smoothed per-batch curve
	maxPoints = 2500 // raw points drawn under a single run's curve
	dpi       = 110
)

var (
	gridColor = color.RGBA{0xe3, 0xe6, 0xec, 0xff}
	refColor  = color.RGBA{0x99, 0x99, 0x99, 0xff}
	rawColor  = color.RGBA{0xb0, 0xb6, 0xc2, 0x90}
)

// newPlot returns a plot with the report's style.
func newPlot(title, xlabel, ylabel string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.Title.TextStyle.Font.Size = vg.Points(12)
	p.X.Label.Text = xlabel
	p.Y.Label.Text = ylabel
	p.X.Label.TextStyle.Font.Size = vg.Points(10)
	p.Y.Label.TextStyle.Font.Size = vg.Points(10)
	p.Legend.TextStyle.Font.Size = vg.Points(8.5)
	p.Legend.Top = true
	p.Legend.ThumbnailWidth = vg.Points(16)
	g := plotter.NewGrid()
	g.Horizontal.Color, g.Vertical.Color = gridColor, gridColor
	p.Add(g)
	return p
}

// render draws a grid of plots (nil cells stay empty) as PNG and SVG.
// With legendOut, each column whose plots have legend entries gives up a
// strip on its right where those legends are drawn, outside the data.
func render(plots [][]*plot.Plot, w, h vg.Length, legendOut bool) (pngB, svgB []byte, err error) {
	rows, cols := len(plots), len(plots[0])
	drawAll := func(c vg.CanvasSizer) {
		dc := draw.New(c)
		var cells [][]draw.Canvas
		if rows == 1 && cols == 1 {
			cells = [][]draw.Canvas{{dc}}
		} else {
			t := draw.Tiles{Rows: rows, Cols: cols, PadX: vg.Millimeter * 6, PadY: vg.Millimeter * 6,
				PadTop: vg.Millimeter * 2, PadBottom: vg.Millimeter * 2, PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 3}
			cells = plot.Align(plots, t, dc)
		}
		strip := make([]vg.Length, cols)
		if legendOut {
			for i := range plots {
				for j, p := range plots[i] {
					if p == nil {
						continue
					}
					r := p.Legend.Rectangle(cells[i][j])
					strip[j] = max(strip[j], r.Max.X-r.Min.X)
				}
			}
		}
		for i := range plots {
			for j, p := range plots[i] {
				if p == nil {
					continue
				}
				c := cells[i][j]
				if strip[j] == 0 {
					p.Draw(c)
					continue
				}
				gap := vg.Millimeter * 3
				leg := p.Legend
				p.Legend = plot.NewLegend()
				p.Draw(draw.Crop(c, 0, -(strip[j] + gap), 0, 0))
				p.Legend = leg
				lc := draw.Crop(c, c.Max.X-c.Min.X-strip[j], 0, 0, -vg.Millimeter*6)
				leg.Left, leg.Top = true, true
				leg.Draw(lc)
			}
		}
	}
	img := vgimg.NewWith(vgimg.UseWH(w, h), vgimg.UseDPI(dpi), vgimg.UseBackgroundColor(color.White))
	drawAll(img)
	var pb bytes.Buffer
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(&pb); err != nil {
		return nil, nil, fmt.Errorf("report: PNG: %w", err)
	}
	sv := vgsvg.New(w, h)
	drawAll(sv)
	var sb bytes.Buffer
	if _, err := sv.WriteTo(&sb); err != nil {
		return nil, nil, fmt.Errorf("report: SVG: %w", err)
	}
	return pb.Bytes(), sb.Bytes(), nil
}

// binned returns the mean of ys in up to n equal-width bins of xs (x at
// the mean x of each bin); with at most n points it returns them as they
// are.
func binned(xs, ys []float64, n int) (bx, by []float64) {
	if len(xs) <= n {
		return append([]float64(nil), xs...), append([]float64(nil), ys...)
	}
	lo, hi := xs[0], xs[0]
	for _, x := range xs {
		lo, hi = math.Min(lo, x), math.Max(hi, x)
	}
	if hi == lo {
		hi = lo + 1
	}
	sx, sy := make([]float64, n), make([]float64, n)
	cnt := make([]int, n)
	for i, x := range xs {
		b := int(float64(n) * (x - lo) / (hi - lo))
		if b >= n {
			b = n - 1
		}
		sx[b] += x
		sy[b] += ys[i]
		cnt[b]++
	}
	for b := range n {
		if cnt[b] > 0 {
			bx = append(bx, sx[b]/float64(cnt[b]))
			by = append(by, sy[b]/float64(cnt[b]))
		}
	}
	return bx, by
}

// averageCurves averages curves of several seeds on a common grid of n
// bins over their joint x range; each curve is binned first.
func averageCurves(curves [][2][]float64, n int) (bx, by []float64) {
	if len(curves) == 1 {
		return binned(curves[0][0], curves[0][1], n)
	}
	var xs, ys []float64
	for _, c := range curves {
		xs = append(xs, c[0]...)
		ys = append(ys, c[1]...)
	}
	return binned(xs, ys, n)
}

func xys(xs, ys []float64) plotter.XYs {
	out := make(plotter.XYs, len(xs))
	for i := range xs {
		out[i].X, out[i].Y = xs[i], ys[i]
	}
	return out
}

// group is the runs of one setting.
type group struct {
	Setting Setting
	Runs    []*Run
	Color   color.RGBA
}

var methodOrder = map[string]int{"none": 0, "iso": 1, "max_norm": 2, "max_norm_label": 3, "marvell": 4, "dcor": 5, "label_dp": 6}

func methodRank(m string) int {
	if r, ok := methodOrder[m]; ok {
		return r
	}
	return 100
}

// groups splits the runs into settings, ordered by dataset, method and
// parameter, each with its colour (method hue, shaded by parameter rank).
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
			if ra, rb := methodRank(a.Method), methodRank(b.Method); ra != rb {
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
			out[k].Color = theme.Shade(theme.MethodColor(out[i].Setting.Method), k-i, j-i)
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

// leakSeries returns the steps and defined leak AUCs of key in r.
func leakSeries(r *Run, key string) (xs, ys []float64) {
	for _, b := range r.Batches {
		if v := b.Leak[key]; v != nil && !math.IsNaN(*v) && !math.IsInf(*v, 0) {
			xs = append(xs, float64(b.Step))
			ys = append(ys, *v)
		}
	}
	return xs, ys
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

func splitKey(k string) (attack, layer string) {
	if i := strings.LastIndexByte(k, '/'); i >= 0 {
		return k[:i], k[i+1:]
	}
	return k, ""
}

// leakKeys returns every leak key seen in the runs' summaries and batches,
// cut-layer keys first, then by layer and attack.
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
		if (ai == "norm") != (aj == "norm") { // the papers' main attack first
			return ai == "norm"
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

func refLine(p *plot.Plot, y float64) {
	f := plotter.NewFunction(func(float64) float64 { return y })
	f.Color = refColor
	f.Width = vg.Points(0.8)
	f.Dashes = []vg.Length{vg.Points(2), vg.Points(2)}
	p.Add(f)
}

func line(p *plot.Plot, xs, ys []float64, c color.Color, width float64, dashed bool) (*plotter.Line, error) {
	l, err := plotter.NewLine(xys(xs, ys))
	if err != nil {
		return nil, err
	}
	l.Color = c
	l.Width = vg.Points(width)
	if dashed {
		l.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
	}
	p.Add(l)
	return l, nil
}

// clampAUCAxis fits the y axis to the data, within [0, 1], always showing 0.5.
func clampAUCAxis(p *plot.Plot) {
	lo, hi := math.Min(p.Y.Min, 0.45), math.Max(p.Y.Max, 0.55)
	pad := 0.03 * (hi - lo)
	p.Y.Min, p.Y.Max = math.Max(0, lo-pad), math.Min(1, hi+pad)
}

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

func binWidth(xs []float64) int {
	if len(xs) <= maxBins {
		return 1
	}
	span := xs[len(xs)-1] - xs[0]
	w := int(math.Round(span / maxBins))
	return max(w, 1)
}

// stat averages a summary figure over runs, skipping missing values.
func stat(runs []*Run, f func(*Summary) *float64) (float64, bool) {
	var s float64
	var n int
	for _, r := range runs {
		if r.Summary == nil {
			continue
		}
		if v := f(r.Summary); v != nil && !math.IsNaN(*v) {
			s += *v
			n++
		}
	}
	if n == 0 {
		return math.NaN(), false
	}
	return s / float64(n), true
}

func leakStat(key string, abs bool) func(*Summary) *float64 {
	return func(s *Summary) *float64 {
		st, ok := s.Leak[key]
		if !ok {
			return nil
		}
		if abs {
			return st.Q95Abs
		}
		return st.Q95
	}
}

// tradeoffFigure draws, for the leak key, leak (q95 |AUC−0.5| and raw q95)
// against best test AUC and final test loss: one curve per method, points
// labelled with the parameter.
func tradeoffFigure(gs []*group, dataset, key string) ([][]*plot.Plot, int, error) {
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
		{"best test AUC", func(s *Summary) *float64 { return s.TestAUCBest }},
		{"final test loss (BCE)", func(s *Summary) *float64 { return s.TestLossFinal }},
	}
	grid := make([][]*plot.Plot, 2)
	points := 0
	for i, ya := range ysAx {
		grid[i] = make([]*plot.Plot, 2)
		for j, xa := range xsAx {
			p := newPlot(fmt.Sprintf("%s vs leakage", ya.name), xa.name, ya.name)
			p.Legend.Top = i == 1 // test AUC falls as protection grows: keep the legend clear of the points
			p.Legend.Left = false
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
					colors[m] = theme.MethodColor(m)
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
						return nil, 0, err
					}
					thumbs = append(thumbs, l)
				}
				s, err := plotter.NewScatter(xys(xs, ys))
				if err != nil {
					return nil, 0, err
				}
				s.GlyphStyle.Color = c
				s.GlyphStyle.Radius = vg.Points(3)
				s.GlyphStyle.Shape = draw.CircleGlyph{}
				p.Add(s)
				thumbs = append(thumbs, s)
				if hasText(lbls) {
					lb, err := plotter.NewLabels(plotter.XYLabels{XYs: xys(xs, ys), Labels: lbls})
					if err != nil {
						return nil, 0, err
					}
					lb.Offset = vg.Point{X: vg.Points(4), Y: vg.Points(3)}
					for k := range lb.TextStyle {
						lb.TextStyle[k].Font.Size = vg.Points(8)
						lb.TextStyle[k].Color = c
					}
					p.Add(lb)
				}
				p.Legend.Add(m, thumbs...)
				if i == 0 && j == 0 {
					points += len(pts)
				}
			}
			padAxes(p)
			grid[i][j] = p
		}
	}
	if points == 0 {
		return nil, 0, nil
	}
	return grid, points, nil
}

func hasText(ss []string) bool {
	for _, s := range ss {
		if s != "" {
			return true
		}
	}
	return false
}

// padAxes widens tight axes so that points and labels are not on the frame.
func padAxes(p *plot.Plot) {
	pad := func(a *plot.Axis, frac float64) {
		span := a.Max - a.Min
		if span <= 0 || math.IsNaN(span) {
			span = math.Max(math.Abs(a.Max)*0.1, 0.01)
		}
		a.Min -= frac * span
		a.Max += frac * span * 1.6 // room for labels on the right
	}
	pad(&p.X, 0.08)
	pad(&p.Y, 0.1)
}

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
		palette := []color.RGBA{theme.MethodColor("marvell"), theme.MethodColor("label_dp"), theme.MethodColor("dcor"),
			theme.MethodColor("max_norm"), theme.MethodColor("iso"), theme.MethodColor("none"), theme.MethodColor("max_norm_label")}
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

// protSeries returns the steps and values of a protection field.
func protSeries(r *Run, field string) (xs, ys []float64) {
	for _, b := range r.Batches {
		if v := b.Protection[field]; v != nil && !math.IsNaN(*v) && !math.IsInf(*v, 0) {
			xs = append(xs, float64(b.Step))
			ys = append(ys, *v)
		}
	}
	return xs, ys
}

// marvellFigure draws a Marvell run's sumKL before/after and its leak-AUC
// bound against the measured leak AUC (norm/cut, cosine/cut).
func marvellFigure(r *Run, title string) ([][]*plot.Plot, error) {
	kx, ky := protSeries(r, "sumKL")
	if len(kx) == 0 {
		return nil, nil
	}
	top := newPlot("sumKL per batch — "+title, "training step (batch)", "sumKL (nats, log scale)")
	top.Y.Scale = plot.LogScale{}
	top.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	floor := func(ys []float64) []float64 {
		out := make([]float64, len(ys))
		for i, y := range ys {
			out[i] = math.Max(y, 1e-9)
		}
		return out
	}
	if bx, by := protSeries(r, "sumKL_before"); len(bx) > 0 {
		x, y := binned(bx, floor(by), maxBins)
		l, err := line(top, x, y, theme.MethodColor("none"), 1.4, true)
		if err != nil {
			return nil, err
		}
		top.Legend.Add("before noise (sumKL of the clean gradients)", l)
	}
	x, y := binned(kx, floor(ky), maxBins)
	l, err := line(top, x, y, theme.MethodColor("marvell"), 1.6, false)
	if err != nil {
		return nil, err
	}
	top.Legend.Add("after Marvell noise (sumKL*)", l)

	bot := newPlot("Leak AUC: bound and measured — "+title, "training step (batch)", "leak AUC")
	if bx, by := protSeries(r, "auc_bound"); len(bx) > 0 {
		x, y := binned(bx, by, maxBins)
		l, err := line(bot, x, y, theme.MethodColor("label_dp"), 1.6, true)
		if err != nil {
			return nil, err
		}
		bot.Legend.Add("worst-case bound ½+√ε/2−ε/8", l)
	}
	for i, k := range []string{"norm/cut", "cosine/cut"} {
		xs, ys := leakSeries(r, k)
		if len(xs) == 0 {
			continue
		}
		x, y := binned(xs, ys, maxBins)
		c := theme.MethodColor("marvell")
		if i == 1 {
			c = theme.MethodColor("dcor")
		}
		l, err := line(bot, x, y, c, 1.5, false)
		if err != nil {
			return nil, err
		}
		bot.Legend.Add("measured "+k, l)
	}
	refLine(bot, 0.5)
	clampAUCAxis(bot)
	return [][]*plot.Plot{{top}, {bot}}, nil
}

// evalFigure draws test AUC and test loss over training (eval.jsonl) and
// the training loss (batches.jsonl, smoothed), one line per setting.
func evalFigure(gs []*group, dataset string) ([][]*plot.Plot, int, error) {
	pa := newPlot("Test AUC over training", "training step (batch)", "test AUC")
	pl := newPlot("Test loss over training", "training step (batch)", "test loss (BCE)")
	pt := newPlot("Training loss (smoothed)", "training step (batch)", "train loss (BCE, batch mean)")
	pc := newPlot("Model completion over training", "training step (batch)", "completion AUC (dashed: supervised only)")
	n, nc := 0, 0
	for _, g := range gs {
		if g.Setting.Dataset != dataset {
			continue
		}
		var ca, cl, ct, cs, cu [][2][]float64
		for _, r := range g.Runs {
			var ax, ay, lx, ly, tx, ty, sx, sy, ux, uy []float64
			for _, e := range r.Evals {
				if v, ok := e.Attacks["completion/auc"]; ok {
					sx, sy = append(sx, float64(e.Step)), append(sy, v)
				}
				if v, ok := e.Attacks["completion_supervised/auc"]; ok {
					ux, uy = append(ux, float64(e.Step)), append(uy, v)
				}
				if e.TestAUC != nil && !math.IsNaN(*e.TestAUC) {
					ax, ay = append(ax, float64(e.Step)), append(ay, *e.TestAUC)
				}
				if e.TestLoss != nil && !math.IsNaN(*e.TestLoss) {
					lx, ly = append(lx, float64(e.Step)), append(ly, *e.TestLoss)
				}
			}
			for _, b := range r.Batches {
				if !math.IsNaN(b.Loss) && !math.IsInf(b.Loss, 0) {
					tx, ty = append(tx, float64(b.Step)), append(ty, b.Loss)
				}
			}
			if len(ax) > 0 {
				ca = append(ca, [2][]float64{ax, ay})
			}
			if len(lx) > 0 {
				cl = append(cl, [2][]float64{lx, ly})
			}
			if len(tx) > 0 {
				ct = append(ct, [2][]float64{tx, ty})
			}
			if len(sx) > 0 {
				cs = append(cs, [2][]float64{sx, sy})
			}
			if len(ux) > 0 {
				cu = append(cu, [2][]float64{ux, uy})
			}
		}
		for k, curves := range [][][2][]float64{cs, cu} {
			if len(curves) == 0 {
				continue
			}
			x, y := meanAtSteps(curves)
			if _, err := line(pc, x, y, g.Color, 1.5, k == 1); err != nil {
				return nil, 0, err
			}
			nc++
		}
		lbl := g.Setting.Label()
		for _, c := range []struct {
			p      *plot.Plot
			curves [][2][]float64
			bins   int
		}{{pa, ca, 1 << 30}, {pl, cl, 1 << 30}, {pt, ct, maxBins}} {
			if len(c.curves) == 0 {
				continue
			}
			var x, y []float64
			if len(c.curves) == 1 || c.bins < 1<<30 {
				x, y = averageCurves(c.curves, min(c.bins, maxBins))
			} else {
				x, y = meanAtSteps(c.curves)
			}
			l, err := line(c.p, x, y, g.Color, 1.5, false)
			if err != nil {
				return nil, 0, err
			}
			if c.p == pl {
				c.p.Legend.Add(lbl, l)
			}
			if c.p == pa {
				n++
			}
		}
	}
	if n == 0 {
		return nil, 0, nil
	}
	if nc == 0 {
		pc = nil
	}
	return [][]*plot.Plot{{pa, pl}, {pt, pc}}, n, nil
}

// meanAtSteps averages several seeds' evaluation curves step by step.
func meanAtSteps(curves [][2][]float64) (xs, ys []float64) {
	sum := map[float64]float64{}
	cnt := map[float64]int{}
	for _, c := range curves {
		for i, x := range c[0] {
			sum[x] += c[1][i]
			cnt[x]++
		}
	}
	for x := range sum {
		xs = append(xs, x)
	}
	sort.Float64s(xs)
	for _, x := range xs {
		ys = append(ys, sum[x]/float64(cnt[x]))
	}
	return xs, ys
}
