package report

import (
	"fmt"
	"sort"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
)

// featureAttacks returns the feature attacks whose mean R² the runs of
// dataset recorded (eval.jsonl features "ATTACK/r2_mean"), sorted.
func featureAttacks(gs []*group, dataset string) []string {
	seen := map[string]bool{}
	for _, g := range gs {
		if g.Setting.Dataset != dataset {
			continue
		}
		for _, r := range g.Runs {
			for _, e := range r.Evals {
				for k := range e.Features {
					if a, ok := strings.CutSuffix(k, "/r2_mean"); ok {
						seen[a] = true
					}
				}
			}
		}
	}
	out := make([]string, 0, len(seen))
	for a := range seen {
		out = append(out, a)
	}
	sort.Strings(out)
	return out
}

// featureFigure draws, one panel per feature attack, its mean R² over the
// passive party's numeric columns at every evaluation (solid) and that of
// the same decoder on the active party's own columns alone (dashed), one
// colour per setting (seeds averaged step by step); nil without any.
func featureFigure(gs []*group, dataset string) ([][]*plot.Plot, error) {
	attacks := featureAttacks(gs, dataset)
	if len(attacks) == 0 {
		return nil, nil
	}
	var row []*plot.Plot
	for _, a := range attacks {
		p := newPlot("Reconstruction of the passive's columns: "+a, "training step (batch)", "mean R² over numeric columns (dashed: own columns only)")
		for _, g := range gs {
			if g.Setting.Dataset != dataset {
				continue
			}
			for k, key := range []string{a + "/r2_mean", a + "/r2_own_mean"} {
				var curves [][2][]float64
				for _, r := range g.Runs {
					var x, y []float64
					for _, e := range r.Evals {
						if v, ok := e.Features[key]; ok {
							x, y = append(x, float64(e.Step)), append(y, v)
						}
					}
					if len(x) > 0 {
						curves = append(curves, [2][]float64{x, y})
					}
				}
				if len(curves) == 0 {
					continue
				}
				x, y := meanAtSteps(curves)
				l, err := line(p, x, y, g.Color, 1.5, k == 1)
				if err != nil {
					return nil, err
				}
				if k == 0 {
					p.Legend.Add(g.Setting.Label(), l)
				}
			}
		}
		row = append(row, p)
	}
	return [][]*plot.Plot{row}, nil
}

// featuresSection draws the feature attacks' figure per dataset, or
// returns nil when no run recorded any (the section is then left out).
func (b *builder) featuresSection() (*Section, error) {
	s := &Section{ID: "features", Title: "The passive party's features",
		Lead: "How well the active party reconstructs the passive party's numeric columns of the test rows from the cut embedding (and its own columns), fitted on an auxiliary set of rows whose passive features it knows: R² = 1 − MSE/variance averaged over the columns, at every evaluation (eval.jsonl features; 0 is the prior, the test rows' mean). Dashed: the same decoder on the active party's own columns alone. Method: docs/methods/features.md."}
	for _, d := range b.ds {
		grid, err := featureFigure(b.gs, d)
		if err != nil {
			return nil, err
		}
		if grid == nil {
			continue
		}
		caption := "mean R² of the reconstruction of the passive's numeric columns"
		if b.multiDS {
			caption = d + ", " + caption
		}
		if err := addFig(s, "features"+b.dsName(d), caption, grid, vg.Length(6*len(grid[0]))*vg.Inch, 4.5*vg.Inch, true); err != nil {
			return nil, fmt.Errorf("features: %w", err)
		}
	}
	if len(s.Figures) == 0 {
		return nil, nil
	}
	return s, nil
}
