package report

import (
	"fmt"
	"math"

	"github.com/splitguard/splitguard/attack"
	"github.com/splitguard/splitguard/report/theme"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
)

// marvellSectionID is the Marvell figure's section, Marvell's per-batch
// figures (protection.sumKL …) drawn.
const marvellSectionID = "marvell"

// measuredKeys returns the cut-layer leak keys ("ATTACK/cut") of the first
// n registered attacks, by attack.Rank, that r measured.
func measuredKeys(r *Run, n int) []string {
	names := attack.Names()
	attack.SortByRank(names)
	var keys []string
	for _, a := range names {
		if k := a + "/cut"; len(keys) < n {
			if xs, _ := leakSeries(r, k); len(xs) > 0 {
				keys = append(keys, k)
			}
		}
	}
	return keys
}

// marvellFigure draws a Marvell run's sumKL before/after and its leak-AUC
// bound against the measured leak AUC (the cut layer's figures of the run's
// first two attacks by rank: norm and cosine by default).
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
		x, y := smoothSeries(bx, floor(by))
		l, err := line(top, x, y, theme.Series[5], 1.4, true)
		if err != nil {
			return nil, err
		}
		top.Legend.Add("before noise (sumKL of the clean gradients)", l)
	}
	x, y := smoothSeries(kx, floor(ky))
	l, err := line(top, x, y, theme.Series[0], 1.6, false)
	if err != nil {
		return nil, err
	}
	top.Legend.Add("after Marvell noise (sumKL*, the optimum)", l)

	bot := newPlot("Leak AUC: bound and measured — "+title, "training step (batch)", "leak AUC")
	if bx, by := protSeries(r, "auc_bound"); len(bx) > 0 {
		x, y := smoothSeries(bx, by)
		l, err := line(bot, x, y, theme.Series[1], 1.6, true)
		if err != nil {
			return nil, err
		}
		bot.Legend.Add("worst-case bound ½+√ε/2−ε/8, ε = sumKL*", l)
	}
	for i, k := range measuredKeys(r, 2) {
		xs, ys := leakSeries(r, k)
		x, y := smoothSeries(xs, ys)
		c := theme.Series[0]
		if i == 1 {
			c = theme.Series[2]
		}
		l, err := line(bot, x, y, c, 1.5, false)
		if err != nil {
			return nil, err
		}
		a, ly := splitKey(k)
		bot.Legend.Add(fmt.Sprintf("measured: %s attack, %s layer", a, ly), l)
	}
	refLine(bot, 0.5)
	clampAUCAxis(bot)
	return [][]*plot.Plot{{top}, {bot}}, nil
}

// marvellNotes define the symbols of the Marvell figure.
var marvellNotes = []string{
	"sumKL — KL(P₁‖P₀) + KL(P₀‖P₁) between the positive and the negative rows' gradient distributions of a batch, each taken as a Gaussian (Marvell).",
	"sumKL* — the sumKL left by Marvell's optimal noise under the power bound; ε in the bound is sumKL* (Theorem 1, for ε < 4).",
}

// marvellSection draws the Marvell figure of the first run of every
// setting that has Marvell's per-batch figures.
func (b *builder) marvellSection() (*Section, error) {
	mv := &Section{ID: marvellSectionID, Title: "Marvell: sumKL, bound and measured leakage",
		Lead: fmt.Sprintf("Top: the batch's sum of KL divergences between the two classes' gradient distributions, before noise and after Marvell's optimal noise (sumKL*). "+
			"Bottom: Theorem 1's worst-case leak-AUC bound ½ + √ε/2 − ε/8 (ε = sumKL*) against the leak AUC the run's first two attacks by rank (norm and cosine by default) measured at the cut layer; every curve is a Gaussian moving mean with σ = %g%% of the steps.", 100*smoothFrac)}
	for _, g := range b.gs {
		if len(g.Runs) == 0 {
			continue
		}
		for _, r := range g.Runs[:1] { // first seed of the setting
			title := g.Setting.Label()
			if b.multiDS {
				title += " (" + g.Setting.Dataset + ")"
			}
			grid, err := marvellFigure(r, title)
			if err != nil {
				return nil, err
			}
			if grid == nil {
				continue
			}
			caption := title
			if len(g.Runs) > 1 {
				caption += " — run " + r.Name
			}
			if err := addFig(mv, "marvell_"+slug(g.Setting.Label())+b.dsName(g.Setting.Dataset), caption, grid, 8.5*vg.Inch, 7*vg.Inch, true, marvellNotes...); err != nil {
				return nil, err
			}
		}
	}
	if len(mv.Figures) == 0 {
		mv.Empty = "No Marvell run (no batch with a protection.sumKL figure)."
	}
	return mv, nil
}
