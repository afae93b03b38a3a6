package report

import (
	"bytes"
	"fmt"
	"image/color"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
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

	// what it was rendered from, for the layout tests
	plots     [][]*plot.Plot
	w, h      vg.Length
	legendOut bool
	notes     []string
}

const (
	maxBins   = 200  // points of a smoothed per-batch curve
	maxPoints = 2500 // raw points drawn under a single run's curve
	dpi       = 110
	noteLine  = 8.5 * 1.3 * vg.Length(1) // height of a note line (see drawNotes), in points
)

var (
	gridColor = color.RGBA{0xe3, 0xe6, 0xec, 0xff}
	refColor  = color.RGBA{0x99, 0x99, 0x99, 0xff}
	rawColor  = color.NRGBA{0xb0, 0xb6, 0xc2, 0x90} // not premultiplied: a faint grey
	noteColor = color.RGBA{0x44, 0x4a, 0x55, 0xff}
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
	p.X.Tick.Marker, p.Y.Tick.Marker = roundTicks{}, roundTicks{}
	g := plotter.NewGrid()
	g.Horizontal.Color, g.Vertical.Color = gridColor, gridColor
	p.Add(g)
	return p
}

// panel is where one plot of a figure goes: Plot is the canvas of the plot
// itself; Legend, when Outside, the strip beside it for its legend.
type panel struct {
	Plot, Legend draw.Canvas
	Outside      bool
}

// layout places a grid of plots (nil cells stay empty) on c. With
// legendOut, each column whose plots have legend entries gives up a strip
// on its right where those legends are drawn, outside the data.
func layout(plots [][]*plot.Plot, c draw.Canvas, legendOut bool) [][]panel {
	rows, cols := len(plots), len(plots[0])
	var cells [][]draw.Canvas
	if rows == 1 && cols == 1 {
		cells = [][]draw.Canvas{{c}}
	} else {
		t := draw.Tiles{Rows: rows, Cols: cols, PadX: vg.Millimeter * 6, PadY: vg.Millimeter * 6,
			PadTop: vg.Millimeter * 2, PadBottom: vg.Millimeter * 2, PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 3}
		cells = plot.Align(plots, t, c)
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
	out := make([][]panel, rows)
	for i := range plots {
		out[i] = make([]panel, cols)
		for j := range plots[i] {
			c := cells[i][j]
			if strip[j] == 0 {
				out[i][j] = panel{Plot: c}
				continue
			}
			gap := vg.Millimeter * 3
			out[i][j] = panel{
				Plot:    draw.Crop(c, 0, -(strip[j] + gap), 0, 0),
				Legend:  draw.Crop(c, c.Max.X-c.Min.X-strip[j], 0, 0, -vg.Millimeter*6),
				Outside: true,
			}
		}
	}
	return out
}

// render draws a grid of plots (see layout) as PNG and SVG. Notes are
// written one per line under the plots (the definitions of the symbols
// the figure uses).
func render(plots [][]*plot.Plot, w, h vg.Length, legendOut bool, notes []string) (pngB, svgB []byte, err error) {
	drawAll := func(c vg.CanvasSizer) {
		panels := layout(plots, drawNotes(draw.New(c), plots, notes), legendOut)
		for i := range plots {
			for j, p := range plots[i] {
				if p == nil {
					continue
				}
				pa := panels[i][j]
				if !pa.Outside {
					p.Draw(pa.Plot)
					continue
				}
				leg := p.Legend
				p.Legend = plot.NewLegend()
				p.Draw(pa.Plot)
				p.Legend = leg
				leg.Left, leg.Top = true, true
				leg.Draw(pa.Legend)
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

func xys(xs, ys []float64) plotter.XYs {
	out := make(plotter.XYs, len(xs))
	for i := range xs {
		out[i].X, out[i].Y = xs[i], ys[i]
	}
	return out
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

func refLine(p *plot.Plot, y float64) {
	f := plotter.NewFunction(func(float64) float64 { return y })
	f.Color = refColor
	f.Width = vg.Points(0.8)
	f.Dashes = []vg.Length{vg.Points(2), vg.Points(2)}
	p.Add(f)
}

// clampAUCAxis fits the y axis to the data, within [0, 1], always showing 0.5.
func clampAUCAxis(p *plot.Plot) {
	lo, hi := math.Min(p.Y.Min, 0.45), math.Max(p.Y.Max, 0.55)
	pad := 0.03 * (hi - lo)
	p.Y.Min, p.Y.Max = math.Max(0, lo-pad), math.Min(1, hi+pad)
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

// drawNotes writes notes, one per line, at the bottom of c in the style of
// the plots' axis labels, and returns the rest of c.
func drawNotes(c draw.Canvas, plots [][]*plot.Plot, notes []string) draw.Canvas {
	if len(notes) == 0 {
		return c
	}
	var sty text.Style
	for _, row := range plots {
		for _, p := range row {
			if p != nil {
				sty = p.X.Label.TextStyle
				break
			}
		}
	}
	sty.Font.Size = vg.Points(8.5)
	sty.Color = noteColor
	sty.XAlign, sty.YAlign = draw.XLeft, draw.YBottom
	lh := sty.Height("Ag") * 1.3
	pad := vg.Millimeter * 2
	for i, n := range notes {
		y := c.Min.Y + pad + lh*vg.Length(len(notes)-1-i)
		c.FillText(sty, vg.Point{X: c.Min.X + vg.Millimeter*3, Y: y}, n)
	}
	return draw.Crop(c, 0, 0, lh*vg.Length(len(notes))+2*pad, 0)
}
