package report

import (
	"fmt"
	"image/color"
	"math"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/splitguard/splitguard/protect"
)

// matrixRows returns the rows of the attacks × protections matrix for the
// runs: every per-batch attack measured at the cut layer ("ATTACK/cut"),
// then every model attack's AUC of the final evaluation ("ATTACK/auc" of
// summary.json's eval_attacks_final), both sorted (a tuned attacker's row,
// "ATTACK_tuned/cut", right after its default's).
func matrixRows(runs []*Run) (cut, model []string) {
	seenC, seenM := map[string]bool{}, map[string]bool{}
	for _, r := range runs {
		if r.Summary == nil {
			continue
		}
		for k := range r.Summary.Leak {
			if strings.HasSuffix(k, "/cut") && !seenC[k] {
				seenC[k] = true
				cut = append(cut, k)
			}
		}
		if m, ok := r.Summary.Raw["eval_attacks_final"].(map[string]any); ok {
			for k := range m {
				if strings.HasSuffix(k, "/auc") && !seenM[k] {
					seenM[k] = true
					model = append(model, k)
				}
			}
		}
	}
	sortAttackKeys(cut)
	sortAttackKeys(model)
	return cut, model
}

// modelAUC returns the run's final value of the model attack key
// ("completion/auc"), or nil.
func modelAUC(key string) func(*Summary) *float64 {
	return func(s *Summary) *float64 {
		m, ok := s.Raw["eval_attacks_final"].(map[string]any)
		if !ok {
			return nil
		}
		if v, ok := m[key].(float64); ok {
			return &v
		}
		return nil
	}
}

// matrixCells computes the attacks × protections matrix of one dataset:
// one column per protection setting, one row per attack with the mean over
// the setting's seeds of q95 |leak AUC − ½| at the cut layer (per-batch
// attacks) or of the final model-completion AUC − ½ (model attacks) or of
// a feature attack's performance ([featureAP], 0 to 1: the share of the
// passive's columns it reconstructs beyond the active's own), a row
// with the strongest per-batch attack against the setting (the largest of
// its cut-layer figures, default and tuned; its name in strongest[j]), and a
// last row with the test-AUC cost: the kept model's test AUC (Summary.MainAUC) of the unprotected
// setting minus the setting's (NaN without an unprotected setting). cols
// is empty when the dataset has fewer than two settings or no attack
// figure.
func matrixCells(gs []*group, dataset string) (cols []*group, rowNames []string, vals [][]float64, strongest []string) {
	var none *group
	for _, g := range gs {
		if g.Setting.Dataset != dataset {
			continue
		}
		cols = append(cols, g)
		if protect.IsReference(g.Setting.Method) && g.Setting.Param == "" {
			none = g
		}
	}
	var runs []*Run
	for _, g := range cols {
		runs = append(runs, g.Runs...)
	}
	cut, model := matrixRows(runs)
	feats := summaryFeatureAttacks(runs)
	if len(cols) < 2 || len(cut)+len(model)+len(feats) == 0 {
		return nil, nil, nil, nil
	}
	for _, k := range cut {
		rowNames = append(rowNames, strings.TrimSuffix(k, "/cut")+" (q95 |leak−½|)")
		row := make([]float64, len(cols))
		for j, g := range cols {
			row[j] = statOrNaN(g.Runs, leakStat(k, true))
		}
		vals = append(vals, row)
	}
	for _, k := range model {
		rowNames = append(rowNames, strings.TrimSuffix(k, "/auc")+" (AUC − ½)")
		row := make([]float64, len(cols))
		for j, g := range cols {
			row[j] = statOrNaN(g.Runs, modelAUC(k)) - 0.5
		}
		vals = append(vals, row)
	}
	for _, a := range feats {
		rowNames = append(rowNames, a+" (features, AP)")
		row := make([]float64, len(cols))
		for j, g := range cols {
			row[j] = statOrNaN(g.Runs, featureAP(a))
		}
		vals = append(vals, row)
	}
	if len(cut) > 0 {
		strong := make([]float64, len(cols))
		strongest = make([]string, len(cols))
		for j := range cols {
			strong[j] = math.NaN()
			for i := range cut {
				if v := vals[i][j]; !math.IsNaN(v) && !(v <= strong[j]) {
					strong[j], strongest[j] = v, strings.TrimSuffix(cut[i], "/cut")
				}
			}
		}
		rowNames = append(rowNames, "strongest attack (q95 |leak−½|)")
		vals = append(vals, strong)
	}
	rowNames = append(rowNames, "test-AUC cost")
	cost := make([]float64, len(cols))
	ref := math.NaN()
	if none != nil {
		ref = statOrNaN(none.Runs, (*Summary).MainAUC)
	}
	for j, g := range cols {
		cost[j] = ref - statOrNaN(g.Runs, (*Summary).MainAUC)
	}
	return cols, rowNames, append(vals, cost), strongest
}

// matrixFigure draws [matrixCells] as coloured cells with their values;
// nil when there is no matrix.
func matrixFigure(gs []*group, dataset string) (*plot.Plot, vg.Length, vg.Length, error) {
	cols, rowNames, vals, strongest := matrixCells(gs, dataset)
	if len(cols) == 0 {
		return nil, 0, 0, nil
	}
	grid := &cellGrid{vals: vals, costRow: len(vals) - 1, full: map[int]float64{}}
	for i, name := range rowNames {
		if strings.HasSuffix(name, " (features, AP)") {
			grid.full[i] = 1
		}
	}
	if strongest != nil {
		grid.names = map[int][]string{len(vals) - 2: strongest}
	}
	p := plot.New()
	p.Title.Text = "What stops what — " + dataset
	p.Title.TextStyle.Font.Size = vg.Points(12)
	colNames := make([]string, len(cols))
	for j, g := range cols {
		colNames[j] = g.Setting.Label()
	}
	// Rows are drawn top to bottom: row i sits at y = n−1−i.
	n := len(rowNames)
	p.X.Tick.Marker = namedTicks(colNames, func(j int) float64 { return float64(j) })
	p.Y.Tick.Marker = namedTicks(rowNames, func(i int) float64 { return float64(n - 1 - i) })
	p.X.Tick.Label.Rotation = math.Pi / 6
	p.X.Tick.Label.XAlign = draw.XRight
	p.X.Tick.Label.YAlign = draw.YTop
	p.X.Tick.Label.Font.Size = vg.Points(8.5)
	p.Y.Tick.Label.Font.Size = vg.Points(8.5)
	p.X.Tick.Length, p.Y.Tick.Length = 0, 0
	p.X.LineStyle.Width, p.Y.LineStyle.Width = 0, 0
	p.Add(grid)
	w := vg.Length(len(cols))*0.95*vg.Inch + 3.2*vg.Inch
	h := vg.Length(n)*0.32*vg.Inch + 1.8*vg.Inch
	return p, w, h, nil
}

// statOrNaN is the mean of f over the runs with a summary, or NaN.
func statOrNaN(runs []*Run, f func(*Summary) *float64) float64 {
	if v, ok := stat(runs, f); ok {
		return v
	}
	return math.NaN()
}

// namedTicks places one labelled tick per name at pos(i).
func namedTicks(names []string, pos func(int) float64) plot.ConstantTicks {
	t := make(plot.ConstantTicks, len(names))
	for i, s := range names {
		t[i] = plot.Tick{Value: pos(i), Label: s}
	}
	return t
}

// cellGrid is a plotter of coloured, labelled cells: vals[i][j] at x = j,
// y = rows−1−i. Leakage cells shade from white (0) to red (≥ 0.5, or a
// row's full value), the
// cost row from white (0) to blue (≥ 0.05); a missing value is grey.
type cellGrid struct {
	vals    [][]float64
	costRow int
	// names, by row, are written under a cell's value (the strongest
	// attack's name).
	names map[int][]string
	// full, by row, is the value a leakage row's red saturates at (0.5
	// where absent: an AUC − ½; 1 for a feature attack's AP).
	full map[int]float64
}

// Plot implements plot.Plotter.
func (c *cellGrid) Plot(dc draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&dc)
	n := len(c.vals)
	for i, row := range c.vals {
		y := float64(n - 1 - i)
		for j, v := range row {
			x := float64(j)
			r := vg.Rectangle{Min: vg.Point{X: trX(x - 0.5), Y: trY(y - 0.5)}, Max: vg.Point{X: trX(x + 0.5), Y: trY(y + 0.5)}}
			dc.FillPolygon(c.color(i, v), []vg.Point{r.Min, {X: r.Max.X, Y: r.Min.Y}, r.Max, {X: r.Min.X, Y: r.Max.Y}})
			text := "—"
			if !math.IsNaN(v) {
				text = fmt.Sprintf("%.3f", v)
				if names := c.names[i]; j < len(names) && names[j] != "" {
					text += "\n" + names[j]
				}
			}
			sty := draw.TextStyle{Color: color.Black, Font: p.X.Tick.Label.Font, XAlign: draw.XCenter, YAlign: draw.YCenter,
				Handler: p.X.Tick.Label.Handler}
			sty.Font.Size = vg.Points(8.5)
			dc.FillText(sty, vg.Point{X: trX(x), Y: trY(y)}, text)
		}
	}
}

func (c *cellGrid) color(i int, v float64) color.Color {
	if math.IsNaN(v) {
		return color.RGBA{0xdd, 0xdd, 0xdd, 0xff}
	}
	if i == c.costRow {
		f := uint8(255 * (1 - math.Min(math.Max(v/0.05, 0), 1)*0.6))
		return color.RGBA{f, f, 0xff, 0xff}
	}
	full := 0.5
	if f, ok := c.full[i]; ok {
		full = f
	}
	f := uint8(255 * (1 - math.Min(math.Max(v/full, 0), 1)*0.75))
	return color.RGBA{0xff, f, f, 0xff}
}

// DataRange implements plot.DataRanger.
func (c *cellGrid) DataRange() (xmin, xmax, ymin, ymax float64) {
	cols := 0
	if len(c.vals) > 0 {
		cols = len(c.vals[0])
	}
	return -0.5, float64(cols) - 0.5, -0.5, float64(len(c.vals)) - 0.5
}

// matrixSection draws the attacks × protections matrix of every dataset.
func (b *builder) matrixSection() (*Section, error) {
	s := &Section{ID: "matrix", Title: "What stops what",
		Lead: "Attacks × protection settings at the cut layer (mean over seeds): q95 over training batches of |leak AUC − 0.5| for the per-batch attacks, " +
			"completion AUC − 0.5 at the final evaluation for model completion (which attacks the trained bottom, after training), " +
			"for the attacks on the passive party's features (key feature_attacks) their AP of the kept model (0: nothing beyond the active's own columns and the prior, 1: every column reconstructed; docs/methods/features.md), " +
			"the strongest per-batch attack against each setting (the largest cut-layer figure, tuned attackers ATTACK_tuned included, with its name), and the test-AUC cost " +
			"(the kept model's test AUC without protection minus the setting's). Red: more leakage (0.5 is total); blue: more cost (0.05 and above)."}
	for _, d := range b.ds {
		p, w, h, err := matrixFigure(b.gs, d)
		if err != nil {
			return nil, err
		}
		if p == nil {
			continue
		}
		if err := addFig(s, "matrix"+b.dsName(d), "attacks × protections — "+d, [][]*plot.Plot{{p}}, w, h, false); err != nil {
			return nil, err
		}
		s.Figures[len(s.Figures)-1].Wide = true
	}
	if len(s.Figures) == 0 {
		s.Empty = "Needs at least two protection settings of one dataset with cut-layer attack figures."
	}
	return s, nil
}
