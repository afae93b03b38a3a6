// Package plan recommends a defence for a table and a threat: a budgeted
// search over the registered defences and their strengths (package
// protect's registry), each setting trained in process (package run) on
// the training split and scored on the validation split only, that
// recommends the cheapest setting whose every attack stays within a leak
// limit. docs/methods/plan.md is its method page.
//
// Its directory holds plan.csv (every setting tried), plan.yaml and
// plan.json (the table and threat it was started with: a rerun with the
// same directory continues, one with another table or threat is refused),
// runs/KEY (each setting's run directory), confirm.csv and
// runs/KEY_seed=S (the confirmation runs on further seeds), frontier.svg
// and frontier.png (the figure) and recommended.yaml (the configuration to
// train).
package plan

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/splitguard/splitguard/attack"
	"github.com/splitguard/splitguard/config"
	"github.com/splitguard/splitguard/metrics"
	"github.com/splitguard/splitguard/run"
	"github.com/splitguard/splitguard/rundir"
)

// DefaultMaxSteps caps each setting's training steps when
// Options.MaxSteps is 0.
const DefaultMaxSteps = 400

// Threat is what the recommendation must withstand.
type Threat struct {
	// Attacks are the attacks that measure the leak, as config key
	// attacks takes them ("all": every attack that is not expensive);
	// empty: DefaultAttacks. Model attacks are refused (they score on the
	// test split).
	Attacks []string
	// Known is how many labels of each batch the attacker knows (config
	// key tuned_known: a tuned attacker beside every per-batch attack; 0:
	// untuned).
	Known int
	// MaxLeak is the limit on every attack's leak: summary.json's
	// leak[ATTACK/LAYER].q95_abs, at every layer (0: no leak limit, when
	// MinTDCS is set).
	MaxLeak float64
	// MinTDCS, when positive, is a floor on the setting's T-DCS (TDCS):
	// a limit on the leak and the cost together. With both limits a
	// setting must meet both.
	MinTDCS float64
}

// Options are a plan's table, threat and limits.
type Options struct {
	// Base is the configuration of every setting's run: the table, the
	// model and the training settings. Its defences, attacks, out,
	// baseline and max_steps are the plan's to set.
	Base   config.Config
	Threat Threat
	// Out is the plan's directory.
	Out string
	// Budget is this invocation's time: no setting starts once it is
	// spent, or when the time left is shorter than the longest setting so
	// far (the reference, no defence, always runs).
	Budget time.Duration
	// MaxSteps caps every setting's training steps (0: DefaultMaxSteps);
	// below the cap the schedule is the data-driven one of train.
	MaxSteps int64
	// Grid is the number of strengths per defence (0: DefaultGrid).
	Grid int
	// Defences restricts the search to these registered defences (empty:
	// every one).
	Defences []string
	// Logger receives the plan's progress lines and the failures of
	// settings (nil: none).
	Logger *slog.Logger
	// Progress, when set, is told about every training step.
	Progress func(Progress)
	// Now is the clock (nil: time.Now).
	Now func() time.Time
	// ConfirmSeeds is the number of further seeds (the plan's seed + 1,
	// + 2, …, on the same test split: config key split_seed) the cheapest
	// setting that meets the limit is trained with before it is
	// recommended; it is recommended only when it meets the limit on every
	// seed, else the next cheapest is confirmed (confirm.go). 0:
	// DefaultConfirmSeeds; NoConfirm: none, the choice on one seed.
	ConfirmSeeds int
	// train trains one setting's run (nil: run.Train); a test replaces it.
	train func(context.Context, config.Config, run.Options) (*rundir.Summary, error)
	// scores reloads a run's validation scores (nil:
	// run.ValidationScores); a test replaces it.
	scores func(dir string) (*run.ValScores, error)
	// priors are the feature priors measured in this invocation, by seed
	// (prior.go).
	priors map[uint64]map[string]metrics.LeakSummary
}

// DefaultConfirmSeeds is the number of confirmation seeds when
// Options.ConfirmSeeds is 0.
const DefaultConfirmSeeds = 2

// NoConfirm as Options.ConfirmSeeds turns the confirmation off.
const NoConfirm = -1

// confirmSeeds is the number of confirmation seeds, 0 for none.
func (o *Options) confirmSeeds() int {
	switch {
	case o.ConfirmSeeds == 0:
		return DefaultConfirmSeeds
	case o.ConfirmSeeds < 0:
		return 0
	}
	return o.ConfirmSeeds
}

// Progress is where a plan stands.
type Progress struct {
	// Done settings are in plan.csv, of Total; Setting is the one
	// training, at Step of Steps.
	Done, Total int
	Setting     string
	Step, Steps int64
	// Confirm is, during the confirmation, the number of the seed
	// training (1 to Options.ConfirmSeeds), of ConfirmSeeds; 0 during the
	// search.
	Confirm, ConfirmSeeds int
	// Left is the budget's time left.
	Left time.Duration
}

// Result is a plan's outcome.
type Result struct {
	// Rows are every setting tried so far (this and earlier invocations),
	// in search order.
	Rows []Row
	// NetOfPrior are the threat's embedding attacks, whose figures in Rows
	// are net of the feature prior (prior.go); FeaturePrior is that prior
	// with the plan's seed, q95 |AUC − ½| by "ATTACK/LAYER" (nil when no
	// setting was trained in this invocation).
	NetOfPrior   []string
	FeaturePrior map[string]float64
	// Recommended indexes Rows: the setting that meets the limit (with a
	// confirmation, on every seed) that the tie rule puts first — among
	// those whose cost is within TieSE of the cheapest, the widest margin
	// under the limit (candidates); -1 when none does.
	Recommended int
	// TieSE is the cost difference that counts as a tie: the standard
	// error of the reference's validation AUC (TieSE; 0 when undefined).
	TieSE float64
	// ConfirmSeeds is the number of confirmation seeds (0: none).
	ConfirmSeeds int
	// Rejected are the settings that met the limit on the plan's seed but
	// not on a confirmation seed, cheapest first.
	Rejected []Row
	// Pending indexes Rows: the setting whose confirmation the budget
	// ended (then nothing is recommended: a rerun continues); -1 when none.
	Pending int
	// Closest are the settings nearest the limit (the smallest strongest
	// leak first) when none meets it.
	Closest []Row
	// Total is the number of settings of the search; Resumed those found
	// done in plan.csv; BudgetSpent says the budget ended the search
	// before every setting was tried.
	Total, Resumed int
	BudgetSpent    bool
	// Attacks are the threat's attacks, resolved.
	Attacks []string
	// Recommendation is the path of recommended.yaml, empty without one.
	Recommendation string
}

// DefaultAttacks returns every registered attack a party without labels
// runs that is not expensive and scores per batch or epoch (not a model
// attack): the cheap label-free attacks.
func DefaultAttacks() []string {
	var out []string
	for _, n := range attack.Names() {
		if d, err := attack.Describe(n); err == nil && d.LabelFree() && !d.Expensive && !d.Model {
			out = append(out, n)
		}
	}
	return out
}

// resolveAttacks expands the threat's attack list.
func resolveAttacks(names []string) ([]string, error) {
	if len(names) == 0 {
		return DefaultAttacks(), nil
	}
	var out []string
	for _, n := range config.ExpandAttacks(names) {
		d, err := attack.Describe(n)
		if err != nil {
			return nil, err
		}
		if d.Model {
			if slices.Contains(names, n) {
				return nil, fmt.Errorf("attack %s scores the trained model on the test split, which a plan never reads: leave it out", n)
			}
			continue // "all"
		}
		out = append(out, n)
	}
	if len(out) == 0 {
		return nil, errors.New("no attack to measure the leak with")
	}
	return out, nil
}

// check returns an error for options that cannot work.
func (o *Options) check() error {
	switch {
	case o.Out == "":
		return config.Keyed(errors.New("no plan directory (key out)"), "out")
	case math.IsNaN(o.Threat.MinTDCS) || o.Threat.MinTDCS < 0 || o.Threat.MinTDCS > 1:
		return config.Keyed(fmt.Errorf("T-DCS floor (key min_tdcs) %v: want a value in (0, 1] (0: none)", o.Threat.MinTDCS), "min_tdcs")
	case o.Threat.MaxLeak == 0 && o.Threat.MinTDCS == 0:
		return config.Keyed(errors.New("no limit: give a leak limit (key max_leak) or a T-DCS floor (key min_tdcs)"), "max_leak", "min_tdcs")
	case math.IsNaN(o.Threat.MaxLeak) || o.Threat.MaxLeak < 0 || o.Threat.MaxLeak > 0.5:
		return config.Keyed(fmt.Errorf("leak limit (key max_leak) %v: want a value in (0, 0.5], a q95 |AUC − ½| (0: none, with a T-DCS floor)", o.Threat.MaxLeak), "max_leak")
	case o.Budget <= 0:
		return config.Keyed(fmt.Errorf("budget (key budget) %v: want a positive duration", o.Budget), "budget")
	case o.MaxSteps < 0:
		return config.Keyed(fmt.Errorf("steps per setting (key steps) %d: want a positive number (0: %d)", o.MaxSteps, DefaultMaxSteps), "steps")
	case o.ConfirmSeeds < NoConfirm:
		return config.Keyed(fmt.Errorf("confirmation seeds (key confirm_seeds) %d: want a positive number (0: %d; %d: none)", o.ConfirmSeeds, DefaultConfirmSeeds, NoConfirm), "confirm_seeds")
	case o.Grid < 0:
		return config.Keyed(fmt.Errorf("strengths per defence (key grid) %d: want a positive number (0: %d)", o.Grid, DefaultGrid), "grid")
	case o.Base.ValFrac <= 0:
		return config.Keyed(errors.New("a plan scores on the validation split, but val_frac is 0 (key val_frac)"), "val_frac")
	}
	return nil
}

// runConfig is the configuration of a setting's run (out empty): Base
// with the setting's defences, the threat's attacks and tuned_known, and
// the step cap — the run recommended.yaml describes. The baseline stays as
// Base has it: the data-driven defaults start the wide part from it
// (key wide_start), so a run without it would train another model than
// the one recommended; it is fitted on the training rows with its penalty
// chosen on the validation rows, and its test figure is not read.
func (o *Options) runConfig(s Setting, attacks []string) config.Config {
	c := o.recommendedConfig(s, attacks)
	c.Out, c.Dump, c.DumpBatches = "", "", 0
	return c
}

// recommendedConfig is the configuration recommended.yaml holds: Base
// with the setting's defences and the threat's attacks, its baseline, and
// the step cap the plan measured the setting under: leakage grows with
// training, so the plan's leak figure holds for the schedule it measured,
// not for a longer one.
func (o *Options) recommendedConfig(s Setting, attacks []string) config.Config {
	c := o.Base
	c.Layers = slices.Clone(c.Layers)
	c.Protect, c.Params = s.Protect, maps.Clone(s.Params)
	c.Attacks = slices.Clone(attacks)
	c.TunedKnown = o.Threat.Known
	c.Out = ""
	if limit := o.stepCap(); c.MaxSteps == 0 || c.MaxSteps > limit {
		c.MaxSteps = limit
	}
	return c
}

// stepCap is the most training steps of a setting's run.
func (o *Options) stepCap() int64 {
	if o.MaxSteps == 0 {
		return DefaultMaxSteps
	}
	return o.MaxSteps
}

// figures reads a finished run's summary into a row.
func figures(r *Row, s *rundir.Summary, limit float64) {
	r.ValAUC = math.NaN()
	if s.ValAUCSelected != nil {
		r.ValAUC = *s.ValAUCSelected
	}
	r.StepMS, r.Seconds = s.StepMSMean, s.Seconds
	r.Leak = map[string]float64{}
	chance := map[string]float64{}
	for _, k := range slices.Sorted(maps.Keys(s.Leak)) {
		l := s.Leak[k]
		at, _, _ := strings.Cut(k, "/")
		if v, ok := r.Leak[at]; !ok || l.Q95Abs > v || math.IsNaN(v) {
			r.Leak[at], chance[at] = l.Q95Abs, l.ChanceQ95Abs
		}
	}
	strongest(r)
	r.Chance = math.NaN()
	if r.Strongest != "" {
		r.Chance = chance[r.Strongest]
	}
	leakBound(r, s)
	r.ValRows, r.ValPositives = s.ValRows, s.ValPositives
	r.Met = r.Err == "" && !math.IsNaN(r.ValAUC) && leakOK(*r, limit)
}

// strongest sets the row's strongest attack: the largest leak (ties: the
// first name in order); NaN leaks count only when nothing else does.
func strongest(r *Row) {
	r.Strongest, r.StrongestLeak = "", math.NaN()
	for _, a := range slices.Sorted(maps.Keys(r.Leak)) {
		v := r.Leak[a]
		if math.IsNaN(v) {
			continue
		}
		if r.Strongest == "" || v > r.StrongestLeak {
			r.Strongest, r.StrongestLeak = a, v
		}
	}
}

// runDir is the run directory of setting s: its key with every character
// other than a letter, a digit, '.', '-' and '=' replaced by '_'
// ("runs/marvell_marvell_s=1"), so that a resumed plan whose search order
// changed (a defence registered since) finds each setting's run.
func runDir(out string, s Setting) string {
	name := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '-', r == '=':
			return r
		}
		return '_'
	}, s.Key())
	return filepath.Join(out, "runs", name)
}
