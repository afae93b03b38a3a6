package report

import (
	"image/color"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// labelledPoint is a point of a plot with the text that names it.
type labelledPoint struct {
	X, Y  float64
	Text  string
	Color color.Color
}

// pointLabels is a plotter that writes a label next to each of its points
// without covering another label or any point of the panel: each label
// goes to the first of eight positions around its point (right-above
// first), tried at growing distances, whose box lies inside the data area
// and overlaps no label placed before, no point, and (when some position
// allows it) no line of the panel. A label that fits nowhere is left out
// and counted in Dropped, never drawn over something.
type pointLabels struct {
	Points []labelledPoint
	// Obstacles are further points of the panel that labels must not
	// cover; Segments are its lines, avoided where possible.
	Obstacles [][2]float64
	Segments  [][4]float64 // x0, y0, x1, y1
	// Style is the labels' text style; Radius the points' glyph radius.
	Style  text.Style
	Radius vg.Length
	// After Plot: the boxes of the labels drawn and of the points, in the
	// canvas's coordinates, and the number of labels left out.
	Placed, PointBoxes []vg.Rectangle
	Dropped            int
}

var _ plot.Plotter = (*pointLabels)(nil)

// labelDirs are the positions tried around a point, in order.
var labelDirs = [][2]int{{1, 1}, {1, -1}, {-1, 1}, {-1, -1}, {1, 0}, {-1, 0}, {0, 1}, {0, -1}}

// Plot implements plot.Plotter.
func (pl *pointLabels) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	gap := vg.Points(1.5)
	r := pl.Radius + vg.Points(0.5)
	pl.Placed, pl.PointBoxes, pl.Dropped = nil, nil, 0
	box := func(x, y float64) vg.Rectangle {
		cx, cy := trX(x), trY(y)
		return vg.Rectangle{Min: vg.Point{X: cx - r, Y: cy - r}, Max: vg.Point{X: cx + r, Y: cy + r}}
	}
	for _, q := range pl.Points {
		pl.PointBoxes = append(pl.PointBoxes, box(q.X, q.Y))
	}
	for _, q := range pl.Obstacles {
		pl.PointBoxes = append(pl.PointBoxes, box(q[0], q[1]))
	}
	var segs [][4]vg.Length
	for _, s := range pl.Segments {
		segs = append(segs, [4]vg.Length{trX(s[0]), trY(s[1]), trX(s[2]), trY(s[3])})
	}
	free := func(b vg.Rectangle, strict bool) bool {
		if !inside(b, c.Rectangle) {
			return false
		}
		for _, o := range pl.Placed {
			if overlaps(b, o) {
				return false
			}
		}
		for _, o := range pl.PointBoxes {
			if overlaps(b, o) {
				return false
			}
		}
		if strict {
			for _, s := range segs {
				if segmentHits(s, b) {
					return false
				}
			}
		}
		return true
	}
	for _, q := range pl.Points {
		if q.Text == "" {
			continue
		}
		sty := pl.Style
		sty.Color = q.Color
		sty.XAlign, sty.YAlign = draw.XLeft, draw.YBottom
		tr := sty.Rectangle(q.Text) // relative to the anchor
		w, h := tr.Max.X-tr.Min.X, tr.Max.Y-tr.Min.Y
		cx, cy := trX(q.X), trY(q.Y)
		var at vg.Rectangle
		found := false
		for pass := 0; pass < 2 && !found; pass++ {
			for ring := 0; ring < 4 && !found; ring++ {
				d := r + gap + vg.Length(ring)*h
				for _, dir := range labelDirs {
					var mn vg.Point
					switch dir[0] {
					case 1:
						mn.X = cx + d
					case -1:
						mn.X = cx - d - w
					default:
						mn.X = cx - w/2
					}
					switch dir[1] {
					case 1:
						mn.Y = cy + d*0.6
					case -1:
						mn.Y = cy - d*0.6 - h
					default:
						mn.Y = cy - h/2
					}
					if dir[0] == 0 { // straight above or below: clear the glyph
						mn.Y += vg.Length(dir[1]) * (d - d*0.6)
					}
					b := vg.Rectangle{Min: mn, Max: vg.Point{X: mn.X + w, Y: mn.Y + h}}
					if free(b, pass == 0) {
						at, found = b, true
						break
					}
				}
			}
		}
		if !found {
			pl.Dropped++
			continue
		}
		pl.Placed = append(pl.Placed, at)
		c.FillText(sty, vg.Point{X: at.Min.X - tr.Min.X, Y: at.Min.Y - tr.Min.Y}, q.Text)
	}
}

// inside reports whether a lies within b.
func inside(a, b vg.Rectangle) bool {
	return a.Min.X >= b.Min.X && a.Min.Y >= b.Min.Y && a.Max.X <= b.Max.X && a.Max.Y <= b.Max.Y
}

// overlaps reports whether a and b share interior points.
func overlaps(a, b vg.Rectangle) bool {
	return a.Min.X < b.Max.X && b.Min.X < a.Max.X && a.Min.Y < b.Max.Y && b.Min.Y < a.Max.Y
}

// segmentHits reports whether the segment s (x0, y0, x1, y1) crosses the
// rectangle b (Liang–Barsky clipping).
func segmentHits(s [4]vg.Length, b vg.Rectangle) bool {
	x0, y0 := float64(s[0]), float64(s[1])
	dx, dy := float64(s[2]-s[0]), float64(s[3]-s[1])
	t0, t1 := 0.0, 1.0
	for _, e := range [][2]float64{
		{-dx, x0 - float64(b.Min.X)}, {dx, float64(b.Max.X) - x0},
		{-dy, y0 - float64(b.Min.Y)}, {dy, float64(b.Max.Y) - y0},
	} {
		p, q := e[0], e[1]
		if p == 0 {
			if q < 0 {
				return false
			}
			continue
		}
		t := q / p
		if p < 0 {
			t0 = max(t0, t)
		} else {
			t1 = min(t1, t)
		}
		if t0 > t1 {
			return false
		}
	}
	return true
}
