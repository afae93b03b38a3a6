package report

import (
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
)

// evalFigure draws test AUC and test loss over training (eval.jsonl) and
// the training loss (batches.jsonl, smoothed), one line per setting.
func evalFigure(gs []*group, dataset string) ([][]*plot.Plot, int, error) {
	pa := newPlot("Test AUC over training", "training step (batch)", "test AUC")
	pl := newPlot("Test loss over training", "training step (batch)", "test loss (BCE)")
	pt := newPlot("Training loss (smoothed)", "training step (batch)", "train loss (BCE, batch mean)")
	n := 0
	for _, g := range gs {
		if g.Setting.Dataset != dataset {
			continue
		}
		var ca, cl, ct [][2][]float64
		for _, r := range g.Runs {
			var ax, ay, lx, ly, tx, ty []float64
			for _, e := range r.Evals {
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
	return [][]*plot.Plot{{pa, pl}, {pt, nil}}, n, nil
}

// utilitySection draws one utility figure per dataset.
func (b *builder) utilitySection() (*Section, error) {
	ev := &Section{ID: "utility", Title: "Utility over training",
		Lead: "Test AUC and test loss at every evaluation (eval.jsonl; seeds averaged step by step) and the smoothed training loss per batch."}
	for _, d := range b.ds {
		grid, _, err := evalFigure(b.gs, d)
		if err != nil {
			return nil, err
		}
		if grid == nil {
			continue
		}
		caption := "test AUC, test loss and training loss"
		if b.multiDS {
			caption = d + ", " + caption
		}
		if err := addFig(ev, "utility"+b.dsName(d), caption, grid, 12*vg.Inch, 7*vg.Inch, true); err != nil {
			return nil, err
		}
	}
	if len(ev.Figures) == 0 {
		ev.Empty = "No evaluation found (eval.jsonl missing or empty)."
	}
	return ev, nil
}
