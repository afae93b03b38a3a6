package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"golang.org/x/term"
	"gopkg.in/yaml.v3"

	"github.com/splitguard/splitguard/config"
	"github.com/splitguard/splitguard/plan"
	"github.com/splitguard/splitguard/protect"
)

func init() { subcommands = append(subcommands, newPlanCmd) }

func newPlanCmd() *cobra.Command {
	cfg := config.Default()
	cfg.Attacks = nil
	var configFile string
	confirmSeeds := plan.DefaultConfirmSeeds
	o := plan.Options{Threat: plan.Threat{MaxLeak: 0.1}, Budget: 10 * time.Minute}
	cmd := &cobra.Command{
		Use:   "plan --data PATH --out DIR [--max-leak X] [--budget D] [flags]",
		Short: "Search the registered defences for one that keeps every attack's leak within a limit at no measurable cost",
		Long: "plan trains every registered defence at a few strengths (no defence first), each on the training split,\n" +
			"scores it on the validation split only (validation AUC of the selected model; every attack's q95 |leak AUC − ½|\n" +
			"over the training batches at every layer, judged by its upper 95% bound, summary.json leak q95_abs_upper, from\n" +
			"at least 59 batches), and recommends, among the settings whose every attack stays within --max-leak on the\n" +
			"plan's seed and on --confirm-seeds further seeds, the one with the widest margin under the limit among those\n" +
			"whose validation-AUC cost is within the validation AUC's standard error of the cheapest. It writes\n" +
			"plan.csv, frontier.svg and recommended.yaml (for train/active/passive/sweep --config) into --out; rerun the\n" +
			"same command to continue an interrupted or budget-limited plan. Table, model and schedule flags are train's;\n" +
			"--attacks (default: the cheap label-free attacks) and --tuned-known are the threat. See docs/methods/plan.md.\n\n" + exitStatusHelp,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			for _, name := range append([]string{"protect", "dump", "dump-batches"}, defenceFlagNames()...) {
				if cmd.Flags().Changed(name) {
					return fmt.Errorf("--%s: the plan chooses the defences and writes no dumps; drop it", name)
				}
			}
			final, err := resolveConfig(cmd.Flags(), configFile, cfg)
			if err != nil {
				return err
			}
			if final.Out == "" {
				return errors.New("--out: the plan's directory is required")
			}
			if configFile != "" && !cmd.Flags().Changed("attacks") {
				// The threat's default, not config.Default's norm, unless the file names attacks.
				if named, err := fileHasKey(configFile, "attacks"); err != nil {
					return err
				} else if !named {
					final.Attacks = nil
				}
			}
			if confirmSeeds < 0 {
				return fmt.Errorf("--confirm-seeds %d: want 0 (none) or more", confirmSeeds)
			}
			o.ConfirmSeeds = confirmSeeds
			if confirmSeeds == 0 {
				o.ConfirmSeeds = plan.NoConfirm
			}
			if cmd.Flags().Changed("min-tdcs") && !cmd.Flags().Changed("max-leak") {
				o.Threat.MaxLeak = 0 // the T-DCS floor is the limit
			}
			o.Base, o.Out = final, final.Out
			o.Threat.Attacks, o.Threat.Known = final.Attacks, final.TunedKnown
			o.Base.Protect, o.Base.Params = protect.Reference(), nil
			return runPlan(cmd.Context(), o, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	trainFlags(cmd.Flags(), &cfg)
	fs := cmd.Flags()
	fs.StringVar(&configFile, "config", "", "YAML config file of the table, model and schedule (train's keys); flags given on the command line win")
	fs.Float64Var(&o.Threat.MaxLeak, "max-leak", o.Threat.MaxLeak, "leak limit: every attack's q95 |leak AUC − ½| over the training batches, at every layer, at most this (with --min-tdcs and not given: none)")
	fs.Float64Var(&o.Threat.MinTDCS, "min-tdcs", 0, "T-DCS floor: the setting's T-DCS (VFLAIR's defence capability score over the attacks, validation AUC against no defence's; docs/methods/plan.md) at least this; alone, or with --max-leak both must hold")
	fs.DurationVar(&o.Budget, "budget", o.Budget, "time of this invocation: no setting starts after it (nor when less is left than the longest setting took)")
	fs.Int64Var(&o.MaxSteps, "steps", o.MaxSteps, fmt.Sprintf("training steps per setting at most: the data-driven schedule capped (0: %d)", plan.DefaultMaxSteps))
	fs.IntVar(&confirmSeeds, "confirm-seeds", confirmSeeds, "further seeds (on the same test split) the chosen setting within the limit is trained with; it is recommended only within the limit on every seed, else the next in the choice's order is tried (0: none, the choice on one seed)")
	fs.IntVar(&o.Grid, "grid", o.Grid, fmt.Sprintf("strengths per defence, log-spaced (0: %d)", plan.DefaultGrid))
	fs.StringSliceVar(&o.Defences, "defences", o.Defences, "search only these defences: "+strings.Join(append(protect.Names(), protect.AddOnNames()...), ", ")+" (default: every one)")
	return cmd
}

// defenceFlagNames returns the flags of every defence parameter.
func defenceFlagNames() []string {
	var out []string
	for _, p := range protect.AllParams() {
		out = append(out, FlagName(p.Key))
	}
	return out
}

func runPlan(ctx context.Context, o plan.Options, stdout, stderr io.Writer) error {
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, stop := notifyStop(ctx, func(name string) {
		fmt.Fprintf(stderr, "splitguard: received %s: stopping the plan; the setting in progress is dropped, rerun the same command to continue\n", name)
	})
	defer stop()
	prog := newPlanProgress(stderr)
	o.Logger = newLineLogger(prog.logWriter(), newTrainCmd())
	o.Progress = prog.update
	res, err := plan.Run(ctx, o)
	prog.finish()
	if err != nil {
		return err
	}
	printPlan(stdout, o, res)
	return nil
}

// printPlan prints the plan's outcome: the recommendation, or that none
// meets the limit and the settings nearest it.
func printPlan(w io.Writer, o plan.Options, res *plan.Result) {
	fmt.Fprintf(w, "\nplan %s: %d of %d settings tried (%d from an earlier invocation); attacks %s",
		o.Out, len(res.Rows), res.Total, res.Resumed, strings.Join(res.Attacks, ", "))
	if o.Threat.Known > 0 {
		fmt.Fprintf(w, " with their tuned attackers (%d known labels per batch)", o.Threat.Known)
	}
	fmt.Fprintln(w)
	if left := res.Total - len(res.Rows); res.BudgetSpent && left > 0 {
		fmt.Fprintf(w, "the budget (%v) ended the search: rerun the same command to try the other %d settings\n", o.Budget, left)
	}
	fmt.Fprintf(w, "limit: %s\n", o.Threat.Limits())
	if len(res.NetOfPrior) > 0 {
		fmt.Fprintf(w, "%s judged beyond the passive's own columns: chance floor + figure − the same attack on the bottom as initialised (%s)%s\n",
			strings.Join(res.NetOfPrior, ", "), filepath.Join(o.Out, "runs", "feature_prior_seed=*"), priorText(res.FeaturePrior))
	}
	for _, r := range res.Rejected {
		why := "not with every seed"
		if r.Seeds.ByPrediction {
			why = fmt.Sprintf("with every seed, but a further seed's leak may not be: %.0f%% prediction bound %.4f", 100*plan.PredictionLevel, r.Seeds.LeakPred)
		}
		fmt.Fprintf(w, "rejected: %s — within the limit with the plan's seed, %s: strongest leak %.4f (95%% upper bound %.4f), then up to %.4f (bound up to %.4f) over %d seeds; T-DCS %.4f, then down to %.4f\n",
			r.Legend, why, r.StrongestLeak, r.Bound, r.Seeds.Leak, r.Seeds.LeakBound, r.Seeds.N, r.TDCS, r.Seeds.TDCS)
	}
	if res.Recommended >= 0 {
		r := res.Rows[res.Recommended]
		fmt.Fprintf(w, "recommended: %s — validation AUC %.4f (cost %.4f against no defence), strongest attack %s at %.4f (95%% upper bound %.4f over %d batches), T-DCS %.4f, %.1f ms per step\n",
			r.Legend, r.ValAUC, r.Cost, r.Strongest, r.StrongestLeak, r.Bound, r.Batches, r.TDCS, r.StepMS)
		if res.TieSE > 0 {
			fmt.Fprintf(w, "costs within %.4f of the cheapest (the validation AUC's standard error) count as equal: among them the widest margin under the limit is chosen\n", res.TieSE)
		}
		if f := r.Seeds; f.N > 1 {
			fmt.Fprintf(w, "confirmed on %d seeds: strongest leak %.4f to %.4f (a further seed's: at most %.4f, %.0f%% prediction bound), cost %.4f on average (%.4f to %.4f%s), T-DCS at least %.4f\n",
				f.N, f.LeakLo, f.Leak, f.LeakPred, 100*plan.PredictionLevel, f.Cost, f.CostLo, f.CostHi, plan.CostIntervalText(f), f.TDCS)
		}
		fmt.Fprintf(w, "configuration: %s (splitguard train --config %s --out DIR)\n", res.Recommendation, res.Recommendation)
		return
	}
	if res.Pending >= 0 {
		fmt.Fprintf(w, "no recommendation yet: the budget ended while confirming %s on %d further seeds; rerun the same command to continue\n",
			res.Rows[res.Pending].Legend, res.ConfirmSeeds)
		return
	}
	what := "nothing meets the limit within the budget"
	if len(res.Rejected) > 0 {
		what = "nothing meets the limit on every seed (and, with a leak limit, on a further seed by its prediction bound) within the budget"
	}
	fmt.Fprintf(w, "%s; the closest settings:\n", what)
	floor := math.Inf(1)
	for _, r := range res.Closest {
		seeds := ""
		if r.Seeds.N > 1 {
			seeds = fmt.Sprintf(", largest over %d seeds %.4f (bound %.4f; a further seed's: at most %.4f, %.0f%% prediction bound)", r.Seeds.N, r.Seeds.Leak, r.Seeds.LeakBound, r.Seeds.LeakPred, 100*plan.PredictionLevel)
		}
		fmt.Fprintf(w, "  %-34s strongest %s at %.4f (95%% upper bound %.4f)%s (chance floor %.4f), T-DCS %.4f, validation AUC %.4f (cost %.4f)\n", r.Legend, r.Strongest, r.StrongestLeak, r.Bound, seeds, r.Chance, r.TDCS, r.ValAUC, r.Cost)
		floor = math.Min(floor, r.Chance)
		if r.Batches > 0 && r.Batches < plan.MinLeakBatches {
			fmt.Fprintf(w, "    its attacks scored %d batches, fewer than the %d a bound on their q95 needs: train longer (--steps, --early-stop)\n", r.Batches, plan.MinLeakBatches)
		}
	}
	if o.Threat.MaxLeak > 0 && floor > o.Threat.MaxLeak {
		fmt.Fprintf(w, "the limit %g is below the chance floor %.4f: a score blind to the labels gives more at this batch size and positive rate; a larger --batch lowers the floor\n", o.Threat.MaxLeak, floor)
	}
}

// planProgress shows a plan's progress on stderr in progress.go's style:
// a bar over the settings when stderr is a terminal, a plain line every
// few seconds otherwise; both say the budget's time left.
type planProgress struct {
	w    io.Writer
	bar  *progressbar.ProgressBar
	last time.Time
}

func newPlanProgress(w io.Writer) *planProgress {
	p := &planProgress{w: w}
	if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		p.bar = progressbar.NewOptions64(-1, progressbar.OptionSetWriter(w),
			progressbar.OptionShowCount(), progressbar.OptionSetItsString("settings"),
			progressbar.OptionThrottle(200*time.Millisecond), progressbar.OptionClearOnFinish())
	}
	return p
}

func (p *planProgress) update(s plan.Progress) {
	left := max(0, s.Left).Round(time.Second)
	desc := fmt.Sprintf("%s  batch %d/%d  %v left", s.Setting, s.Step, s.Steps, left)
	if s.Confirm > 0 {
		desc = fmt.Sprintf("confirming %s, seed %d of %d  batch %d/%d  %v left", s.Setting, s.Confirm, s.ConfirmSeeds, s.Step, s.Steps, left)
	}
	if p.bar != nil {
		if p.bar.GetMax64() != int64(s.Total) {
			p.bar.ChangeMax64(int64(s.Total))
		}
		p.bar.Describe(desc)
		_ = p.bar.Set64(int64(s.Done))
		return
	}
	if time.Since(p.last) >= 5*time.Second {
		p.last = time.Now()
		if s.Confirm > 0 {
			fmt.Fprintln(p.w, desc)
			return
		}
		fmt.Fprintf(p.w, "setting %d/%d  %s\n", s.Done+1, s.Total, desc)
	}
}

func (p *planProgress) logWriter() io.Writer {
	if p.bar == nil {
		return p.w
	}
	return planBarSafe{p}
}

type planBarSafe struct{ p *planProgress }

func (b planBarSafe) Write(s []byte) (int, error) {
	_ = b.p.bar.Clear()
	return b.p.w.Write(s)
}

func (p *planProgress) finish() {
	if p.bar != nil {
		_ = p.bar.Finish()
	}
}

// fileHasKey reports whether the YAML file at path sets the top-level key.
func fileHasKey(path, key string) (bool, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return false, err
	}
	var m map[string]any
	if err := yaml.Unmarshal(raw, &m); err != nil {
		return false, fmt.Errorf("%s: %w", path, err)
	}
	_, ok := m[key]
	return ok, nil
}

// priorText lists the feature prior's figures (": spectral/first 0.300, …"),
// or nothing.
func priorText(p map[string]float64) string {
	if len(p) == 0 {
		return ""
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(p)) {
		parts = append(parts, fmt.Sprintf("%s %.4f", k, p[k]))
	}
	return ": " + strings.Join(parts, ", ")
}
