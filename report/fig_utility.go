package report

import (
	"fmt"
	"math"
	"strings"

	"github.com/splitguard/splitguard/attack"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
)

// modelAttacks returns the model attacks of the dataset's runs whose AUC
// eval.jsonl records ("ATTACK/auc"; tuned attackers left out), ordered by
// attack.Rank, then by name.
func modelAttacks(gs []*group, dataset string) []string {
	seen := map[string]bool{}
	var names []string
	for _, g := range gs {
		if g.Setting.Dataset != dataset {
			continue
		}
		for _, r := range g.Runs {
			for _, e := range r.Evals {
				for k := range e.Attacks {
					at, ok := strings.CutSuffix(k, "/auc")
					if ok && !strings.HasSuffix(at, tunedSuffix) && !seen[at] {
						seen[at] = true
						names = append(names, at)
					}
				}
			}
		}
	}
	attack.SortByRank(names)
	return names
}

// evalFigure draws test AUC and test loss over training (eval.jsonl) and
// the training loss (batches.jsonl, smoothed), one line per setting, and
// the model attacks' AUC (eval.jsonl's attacks): the first one's
// (modelAttacks) solid, the others dashed.
func evalFigure(gs []*group, dataset string) ([][]*plot.Plot, int, error) {
	pa := newPlot("Test AUC over training", "training step (batch)", "test AUC")
	pl := newPlot("Test loss over training", "training step (batch)", "test loss (BCE)")
	pt := newPlot(fmt.Sprintf("Training loss (Gaussian moving mean, σ = %g%% of the steps)", 100*smoothFrac), "training step (batch)", "train loss (BCE, batch mean)")
	models := modelAttacks(gs, dataset)
	ylabel := "completion AUC"
	if len(models) > 1 {
		ylabel += " (dashed: " + strings.Join(models[1:], ", ") + ")"
	}
	pc := newPlot("Model completion over training", "training step (batch)", ylabel)
	n, nc := 0, 0
	for _, g := range gs {
		if g.Setting.Dataset != dataset {
			continue
		}
		var ca, cl, ct [][2][]float64
		cm := make([][][2][]float64, len(models)) // per model attack
		for _, r := range g.Runs {
			var ax, ay, lx, ly, tx, ty []float64
			mx, my := make([][]float64, len(models)), make([][]float64, len(models))
			for _, e := range r.Evals {
				for i, m := range models {
					if v, ok := e.Attacks[m+"/auc"]; ok {
						mx[i], my[i] = append(mx[i], float64(e.Step)), append(my[i], v)
					}
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
			for i := range models {
				if len(mx[i]) > 0 {
					cm[i] = append(cm[i], [2][]float64{mx[i], my[i]})
				}
			}
		}
		for k, curves := range cm {
			if len(curves) == 0 {
				continue
			}
			x, y := meanAtSteps(curves)
			if _, err := line(pc, x, y, g.Color, 1.5, k > 0); err != nil {
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
