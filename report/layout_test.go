package report

import (
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// drawGrid draws plots on an in-memory canvas the way render does, so
// that the labellers record where their labels went.
func drawGrid(t *testing.T, plots [][]*plot.Plot, w, h vg.Length) {
	t.Helper()
	if _, _, err := render(plots, w, h, true, []string{"a note"}); err != nil {
		t.Fatal(err)
	}
}

// checkLabels fails when a labeller drew a label over another label or a
// point, or outside its panel's data area, or lost a label.
func checkLabels(t *testing.T, name string, pl *pointLabels) {
	t.Helper()
	want := 0
	for _, q := range pl.Points {
		if q.Text != "" {
			want++
		}
	}
	if len(pl.Placed)+pl.Dropped != want {
		t.Errorf("%s: %d labels placed and %d dropped, want %d in all", name, len(pl.Placed), pl.Dropped, want)
	}
	for i, a := range pl.Placed {
		if a.Max.X-a.Min.X <= 0 || a.Max.Y-a.Min.Y <= 0 {
			t.Errorf("%s: label %d has an empty box %v", name, i, a)
		}
		for j, b := range pl.Placed[:i] {
			if overlaps(a, b) {
				t.Errorf("%s: labels %d and %d overlap: %v, %v", name, j, i, b, a)
			}
		}
		for j, p := range pl.PointBoxes {
			if overlaps(a, p) {
				t.Errorf("%s: label %d %v hides point %d %v", name, i, a, j, p)
			}
		}
	}
}

// TestTradeoffLabelsDoNotOverlap draws the trade-off figure of the
// hand-made sweep and checks every label box against every other label
// and every point.
func TestTradeoffLabelsDoNotOverlap(t *testing.T) {
	dir := t.TempDir()
	writeFakeSweep(t, dir, 60)
	set, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	gs := groups(set.Runs)
	grid, n, labels, err := tradeoffFigure(gs, gs[0].Setting.Dataset, "norm/cut")
	if err != nil || grid == nil {
		t.Fatalf("no trade-off figure: %v", err)
	}
	drawGrid(t, grid, 11*vg.Inch, 7.5*vg.Inch)
	if len(labels) != 4 {
		t.Fatalf("%d labellers, want one per panel", len(labels))
	}
	for i, pl := range labels {
		if len(pl.Points) != n {
			t.Errorf("panel %d labels %d points, want the %d settings", i, len(pl.Points), n)
		}
		if pl.Dropped > 0 {
			t.Errorf("panel %d: %d labels found no room in a figure of %d points", i, pl.Dropped, n)
		}
		checkLabels(t, fmt.Sprintf("panel %d", i), pl)
	}
}

// TestLabelsInACrowd places labels for points packed closer than a label
// is wide: none may overlap, hide a point or leave the data area, and
// the ones that fit nowhere are counted, not drawn.
func TestLabelsInACrowd(t *testing.T) {
	for _, tc := range []struct {
		name   string
		points int
		spread float64 // of the cluster, in data units on a [0, 1] axis
	}{
		{"sparse", 8, 0.8},
		{"line", 12, 0.3},
		{"crowd", 40, 0.1},
		{"pile", 30, 0.001},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newPlot("crowd", "x", "y")
			p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = 0, 1, 0, 1
			pl := &pointLabels{Style: p.X.Tick.Label, Radius: vg.Points(3)}
			pl.Style.Font.Size = vg.Points(8)
			for i := range tc.points {
				a := 2 * math.Pi * float64(i) / float64(tc.points)
				r := tc.spread / 2 * float64(i%3+1) / 3
				x, y := 0.5+r*math.Cos(a), 0.5+r*math.Sin(a)
				pl.Points = append(pl.Points, labelledPoint{X: x, Y: y, Text: fmt.Sprintf("s=%d", i)})
				if i > 0 {
					q := pl.Points[i-1]
					pl.Segments = append(pl.Segments, [4]float64{q.X, q.Y, x, y})
				}
			}
			pl.Obstacles = [][2]float64{{0.5, 0.5}}
			p.Add(pl)
			c := vgimg.New(5*vg.Inch, 4*vg.Inch)
			dc := draw.New(c)
			p.Draw(dc)
			checkLabels(t, tc.name, pl)
			if tc.name == "sparse" && pl.Dropped > 0 {
				t.Errorf("%d of %d labels dropped with room to spare", pl.Dropped, tc.points)
			}
			if len(pl.Placed) == 0 {
				t.Errorf("no label placed")
			}
			// Every box lies inside the data area: the axes' canvas.
			da := p.DataCanvas(dc)
			for i, b := range pl.Placed {
				if !inside(b, da.Rectangle) {
					t.Errorf("label %d %v leaves the data area %v", i, b, da.Rectangle)
				}
			}
		})
	}
}

func TestSegmentHits(t *testing.T) {
	b := vg.Rectangle{Min: vg.Point{X: 0, Y: 0}, Max: vg.Point{X: 10, Y: 10}}
	for _, tc := range []struct {
		s    [4]vg.Length
		want bool
	}{
		{[4]vg.Length{-5, 5, 15, 5}, true},    // straight through
		{[4]vg.Length{-5, -5, -1, 20}, false}, // passes left of it
		{[4]vg.Length{2, 2, 3, 3}, true},      // inside
		{[4]vg.Length{-5, 12, 12, -5}, true},  // x + y = 7 crosses it
		{[4]vg.Length{-5, 26, 26, -5}, false}, // x + y = 21 passes the corner (10, 10)
		{[4]vg.Length{-5, 24, 24, -5}, true},  // x + y = 19 cuts the corner
		{[4]vg.Length{11, 0, 11, 10}, false},  // beside it
	} {
		if got := segmentHits(tc.s, b); got != tc.want {
			t.Errorf("segment %v: hits = %v, want %v", tc.s, got, tc.want)
		}
	}
}

// TestFigureTicksAreRound builds every figure of the hand-made sweep and
// of a lone run and checks that each axis with numeric ticks labels round
// values (1, 2, 2.5 or 5 × 10^k apart, multiples of that step).
func TestFigureTicksAreRound(t *testing.T) {
	dir := t.TempDir()
	writeFakeSweep(t, dir, 120)
	set, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	gs := groups(set.Runs)
	d := gs[0].Setting.Dataset
	var all []*plot.Plot
	add := func(grid [][]*plot.Plot, err error) {
		t.Helper()
		if err != nil || grid == nil {
			t.Fatalf("figure missing: %v", err)
		}
		for _, row := range grid {
			for _, p := range row {
				if p != nil {
					all = append(all, p)
				}
			}
		}
	}
	for _, single := range []bool{false, true} {
		g, _, err := progressFigure(gs, d, "norm/cut", single)
		add(g, err)
		g, err = layersFigure(gs, d, leakKeys(set.Runs), single)
		add(g, err)
	}
	g, _, _, err := tradeoffFigure(gs, d, "norm/cut")
	add(g, err)
	g, _, err = evalFigure(gs, d)
	add(g, err)
	for _, gr := range gs {
		if gr.Setting.Method == "marvell" {
			g, err = marvellFigure(gr.Runs[0], "m")
			add(g, err)
			break
		}
	}
	checked := 0
	for i, p := range all {
		for _, ax := range []struct {
			name string
			a    *plot.Axis
		}{{"x", &p.X}, {"y", &p.Y}} {
			if _, ok := ax.a.Tick.Marker.(roundTicks); !ok {
				continue // layer names, or powers of ten on a log axis
			}
			vs, ls := labelled(ax.a.Min, ax.a.Max)
			if len(vs) < 2 {
				t.Errorf("plot %d (%s) %s axis [%g, %g]: %d labelled ticks", i, p.Title.Text, ax.name, ax.a.Min, ax.a.Max, len(vs))
				continue
			}
			step := (vs[len(vs)-1] - vs[0]) / float64(len(vs)-1)
			if !isRound(step) {
				t.Errorf("plot %d (%s) %s axis: ticks %v are %g apart", i, p.Title.Text, ax.name, ls, step)
			}
			checked++
		}
	}
	if checked < len(all) {
		t.Errorf("only %d numeric axes of %d plots checked", checked, len(all))
	}
}

// TestSymbolNotes checks that every parameter symbol in a figure's
// legend gets one definition, from the protections' registry.
func TestSymbolNotes(t *testing.T) {
	gs := []*group{
		{Setting: Setting{Dataset: "d", Method: "none"}},
		{Setting: Setting{Dataset: "d", Method: "marvell+dcor", Param: "s=4, α=0.005"}},
		{Setting: Setting{Dataset: "d", Method: "marvell", Param: "s=1"}},
		{Setting: Setting{Dataset: "d", Method: "iso", Param: "t=9"}},
		{Setting: Setting{Dataset: "other", Method: "label_dp", Param: "ε=2"}},
		{Setting: Setting{Dataset: "d", Method: "plug-in", Param: "κ=3"}}, // unknown symbol
	}
	got := symbolNotes(gs, "d")
	want := []string{"s — ", "α — ", "t — "}
	if len(got) != len(want) {
		t.Fatalf("notes %q, want one each for s, α and t", got)
	}
	for i, w := range want {
		if !strings.HasPrefix(got[i], w) || len(got[i]) < len(w)+10 {
			t.Errorf("note %d = %q, want %q followed by the parameter's help", i, got[i], w)
		}
	}
	if !strings.Contains(got[0], "marvell") || !strings.Contains(got[2], "iso") {
		t.Errorf("notes %q do not come from the registry's help", got)
	}
}

// TestTickLabelsDoNotOverlap lays out every figure of the hand-made
// sweep's page and of a lone run's page at its real size and checks that
// neighbouring tick labels of every numeric axis keep apart.
func TestTickLabelsDoNotOverlap(t *testing.T) {
	if testing.Short() {
		t.Skip("builds two whole pages")
	}
	dir := t.TempDir()
	writeFakeSweep(t, dir, 60)
	sweep, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	lone, err := Load(filepath.Join(dir, "marvell-s1-s1"))
	if err != nil {
		t.Fatal(err)
	}
	axes := 0
	for _, set := range []*Set{sweep, lone} {
		page, err := Build(set)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range page.Sections {
			for _, f := range s.Figures {
				c := vgimg.NewWith(vgimg.UseWH(f.w, f.h), vgimg.UseDPI(dpi))
				panels := layout(f.plots, drawNotes(draw.New(c), f.plots, f.notes), f.legendOut)
				for i, row := range f.plots {
					for j, p := range row {
						if p == nil {
							continue
						}
						da := p.DataCanvas(panels[i][j].Plot)
						name := fmt.Sprintf("%s panel %d,%d (%s)", f.Name, i, j, p.Title.Text)
						axes += checkTickGaps(t, name+" x", &p.X, func(v float64) vg.Length { return da.X(p.X.Norm(v)) },
							func(l string) vg.Length { return p.X.Tick.Label.Width(l) })
						axes += checkTickGaps(t, name+" y", &p.Y, func(v float64) vg.Length { return da.Y(p.Y.Norm(v)) },
							func(l string) vg.Length { return p.Y.Tick.Label.Height(l) })
					}
				}
			}
		}
	}
	if axes < 20 {
		t.Errorf("only %d axes checked", axes)
	}
}

// checkTickGaps fails when two neighbouring labelled ticks of a are
// closer, on the canvas, than half their extents plus 2 points; it
// returns 1 when it checked the axis.
func checkTickGaps(t *testing.T, name string, a *plot.Axis, pos func(float64) vg.Length, extent func(string) vg.Length) int {
	t.Helper()
	if _, ok := a.Tick.Marker.(roundTicks); !ok {
		return 0
	}
	var prev *plot.Tick
	for _, tk := range a.Tick.Marker.Ticks(a.Min, a.Max) {
		if tk.Label == "" {
			continue
		}
		if prev != nil {
			gap := math.Abs(float64(pos(tk.Value) - pos(prev.Value)))
			need := float64(extent(tk.Label)+extent(prev.Label))/2 + 2
			if gap < need {
				t.Errorf("%s: labels %q and %q are %.1f pt apart, need %.1f", name, prev.Label, tk.Label, gap, need)
			}
		}
		prev = &tk
	}
	return 1
}
