package report

import (
	"fmt"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
)

// evalFigure draws test AUC and test loss over training (eval.jsonl) and
// the training loss (batches.jsonl, smoothed), one line per setting.
func evalFigure(gs []*group, dataset string) ([][]*plot.Plot, int, error) {
	pa := newPlot("Test AUC over training", "training step (batch)", "test AUC")
	pl := newPlot("Test loss over training", "training step (batch)", "test loss (BCE)")
	pt := newPlot(fmt.Sprintf("Training loss (Gaussian moving mean, σ = %g%% of the steps)", 100*smoothFrac), "training step (batch)", "train loss (BCE, batch mean)")
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
		}{{pa, ca}, {pl, cl}, {pt, ct}} {
			if len(c.curves) == 0 {
				continue
			}
			var x, y []float64
			switch {
			case c.p == pt: // per batch: noisy, smoothed
				x, y, _ = smoothCurves(c.curves)
			case len(c.curves) == 1: // evaluations: as they are
				x, y = c.curves[0][0], c.curves[0][1]
			default:
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

// utilitySection draws one utility figure per dataset.
func (b *builder) utilitySection() (*Section, error) {
	ev := &Section{ID: "utility", Title: "Utility over training",
		Lead: fmt.Sprintf("Test AUC and test loss at every evaluation (eval.jsonl; seeds averaged step by step) and the training loss per batch as a Gaussian moving mean with σ = %g%% of the steps.", 100*smoothFrac)}
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
		if err := addFig(ev, "utility"+b.dsName(d), caption, grid, 12*vg.Inch, 7*vg.Inch, true, symbolNotes(b.gs, d)...); err != nil {
			return nil, err
		}
	}
	if len(ev.Figures) == 0 {
		ev.Empty = "No evaluation found (eval.jsonl missing or empty)."
	}
	return ev, nil
}
