package plan

import (
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"

	"gopkg.in/yaml.v3"

	"github.com/splitguard/splitguard/atomicfile"
	"github.com/splitguard/splitguard/config"
	"github.com/splitguard/splitguard/report"
	"github.com/splitguard/splitguard/sweep"
)

// Output files of a plan's directory.
const (
	// RecommendedFile is the recommended configuration, for train,
	// active, passive and sweep (--config).
	RecommendedFile = "recommended.yaml"
	// RecheckFile is a sweep file (package sweep) of the recommended
	// configuration with three fresh seeds.
	RecheckFile = "recheck-sweep.yaml"
	// FrontierSVG and FrontierPNG are the frontier figure.
	FrontierSVG = "frontier.svg"
	FrontierPNG = "frontier.png"
)

// LeakLabel names the leak statistic in the figure and the messages.
const LeakLabel = "strongest attack's q95 |leak AUC − ½| (training batches, every layer; embedding attacks beyond the feature prior)"

// writeOutputs writes the figure and, with a recommendation,
// recommended.yaml; without one it removes a recommended.yaml an earlier
// invocation left.
func (o *Options) writeOutputs(res *Result) error {
	pts := make([]report.FrontierPoint, len(res.Rows))
	for i, r := range res.Rows {
		pts[i] = report.FrontierPoint{Method: r.Setting.Legend().Method, Leak: r.StrongestLeak, ValAUC: r.ValAUC, Rejected: r.Seeds.Verdict == Rejected}
		if r.Seeds.N > 1 {
			pts[i].LeakMin, pts[i].LeakMax = r.Seeds.LeakLo, r.Seeds.Leak
		}
	}
	limit := o.Threat.MaxLeak
	if limit == 0 {
		limit = math.NaN() // a T-DCS floor alone: no leak line to draw
	}
	png, svg, err := report.FrontierFigure(pts, limit, res.Recommended, LeakLabel)
	if err != nil {
		return err
	}
	if err := atomicfile.WriteFile(filepath.Join(o.Out, FrontierSVG), svg, 0o644); err != nil {
		return err
	}
	if err := atomicfile.WriteFile(filepath.Join(o.Out, FrontierPNG), png, 0o644); err != nil {
		return err
	}
	path := filepath.Join(o.Out, RecommendedFile)
	if res.Recommended < 0 {
		for _, f := range []string{path, filepath.Join(o.Out, RecheckFile)} {
			if err := os.Remove(f); err != nil && !os.IsNotExist(err) {
				return err
			}
		}
		return nil
	}
	r := res.Rows[res.Recommended]
	c := o.recommendedConfig(r.Setting, res.Attacks)
	y, err := config.Marshal(&c)
	if err != nil {
		return err
	}
	head := fmt.Sprintf("# recommended by splitguard plan (%s): %s\n# validation AUC %.4f (cost %.4f against no defence), strongest attack %s at %.4f (95%% upper bound %.4f over %d batches), T-DCS %.4f; limits: %s\n",
		o.Out, r.Legend, r.ValAUC, r.Cost, r.Strongest, r.StrongestLeak, r.Bound, r.Batches, r.TDCS, o.Threat.Limits())
	if f := r.Seeds; f.N > 1 {
		head += fmt.Sprintf("# confirmed on %d seeds (%d to %d, one test split): strongest leak %.4f to %.4f (a further seed's judged leak at most %.4f, %.0f%% prediction bound), T-DCS at least %.4f, cost %.4f on average (%.4f to %.4f)%s\n",
			f.N, c.Seed, c.Seed+uint64(f.N-1), f.LeakLo, f.Leak, f.LeakPred, 100*PredictionLevel, f.TDCS, f.Cost, f.CostLo, f.CostHi, CostIntervalText(f))
	}
	head += fmt.Sprintf("# measured over at most %d training steps (max_steps): trained longer, the attacks can read more\n", c.MaxSteps)
	if err := atomicfile.WriteFile(path, append([]byte(head), y...), 0o644); err != nil {
		return err
	}
	res.Recommendation = path
	first := c.Seed + uint64(res.ConfirmSeeds) + 1
	sw, err := recheckSweep(y, first, c.DataSeed())
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(filepath.Join(o.Out, RecheckFile), append([]byte("# the recommended setting with three fresh seeds (seeds the plan never trained; the plan's test split), judged on the test split: splitguard sweep "+RecheckFile+" --out DIR\n"), sw...), 0o644)
}

// CostIntervalText is the sentence on a further seed's test cost that
// follows the cost's range over the seeds ("; a further seed's test cost:
// within [lo, hi], 95% prediction interval"), empty without an interval.
func CostIntervalText(f SeedFigures) string {
	if f.N < 2 || math.IsNaN(f.CostPILo) || math.IsNaN(f.CostPIHi) {
		return ""
	}
	return fmt.Sprintf("; a further seed's test cost: within [%.4f, %.4f], %.0f%% prediction interval (the seeds' spread and the paired AUC difference's standard error %.4f, DeLong)",
		f.CostPILo, f.CostPIHi, 100*CostLevel, f.CostSE)
}

// recheckSweep returns the sweep file (package sweep) that trains the
// recommended configuration (YAML y, out dropped: the sweep names each
// run's directory) with the three seeds from first on, the data and the
// test split those of seed splitSeed (config key split_seed).
func recheckSweep(y []byte, first, splitSeed uint64) ([]byte, error) {
	var base map[string]any
	if err := yaml.Unmarshal(y, &base); err != nil {
		return nil, err
	}
	delete(base, "out")
	base["split_seed"] = splitSeed
	spec := struct {
		Base  map[string]any   `yaml:"base"`
		Seeds []uint64         `yaml:"seeds,flow"`
		Grid  []map[string]any `yaml:"grid"`
	}{base, []uint64{first, first + 1, first + 2}, []map[string]any{{"protect": base["protect"]}}}
	out, err := yaml.Marshal(&spec)
	if err != nil {
		return nil, err
	}
	if _, err := sweep.ParseSpec(out, RecheckFile); err != nil {
		return nil, fmt.Errorf("the recheck sweep: %w", err)
	}
	return out, nil
}

// logger returns the plan's logger, one that discards when none is set.
func (o Options) logger() *slog.Logger {
	if o.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return o.Logger
}
