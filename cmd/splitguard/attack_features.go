package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/splitguard/splitguard/attack/feature"
	"github.com/splitguard/splitguard/data"
	"github.com/splitguard/splitguard/netrun"
	"github.com/splitguard/splitguard/run"
)

// featuresOptions are the flags of `attack features`.
type featuresOptions struct {
	run     string
	passive bool
	attacks []string
	aux     int
}

func newAttackFeaturesCmd() *cobra.Command {
	var o featuresOptions
	cmd := &cobra.Command{
		Use:   "features --run DIR [--passive] [--feature-attacks LIST] [--feature-aux N]",
		Short: "The active party's reconstruction of the passive party's features from a run's trained bottom",
		Long: `The learned inverse (docs/methods/features.md): a decoder from the cut
embedding (and the active party's own columns) to the passive party's columns,
fitted on --feature-aux training rows whose passive features the attacker knows
(drawn by the run's seed), reconstructs the test rows' passive columns.

An in-process run directory (splitguard train): the data is reloaded and split
between the parties as the run split it (keys passive_columns, active_columns),
and the bottom of bottom.model (the selected model) embeds the rows; the figures
are those of the run's evaluations.

A two-party run's passive directory (--passive): the passive party audits
itself, without any label and without the active party's columns, on its own
training and test rows.

Prints one JSON line {"run": …, "features": {…}} with the figures of
eval.jsonl's features: per passive column ATTACK/r2/COL and ATTACK/r2_own/COL
(numeric; R² against the test rows' mean), ATTACK/acc/COL, ATTACK/acc_own/COL,
ATTACK/acc_prior/COL (categorical; the prior is the majority class), and their
means over columns, ATTACK/r2_mean & co.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return attackFeatures(cmd.OutOrStdout(), o) },
	}
	f := cmd.Flags()
	f.StringVar(&o.run, "run", "", "run directory: an in-process run, or with --passive a two-party run's passive directory")
	f.BoolVar(&o.passive, "passive", false, "the run directory is a two-party run's passive directory")
	f.StringSliceVar(&o.attacks, "feature-attacks", []string{"inverse_linear"}, "feature attacks to run: "+fmt.Sprint(feature.Names()))
	f.IntVar(&o.aux, "feature-aux", 0, "training rows whose passive features the attacker knows (0: the run's key feature_aux, else 1000)")
	return cmd
}

func attackFeatures(w io.Writer, o featuresOptions) error {
	fail := func(err error) error { return fmt.Errorf("attack features: %w", err) }
	if o.run == "" {
		return fail(errors.New("--run is required"))
	}
	if o.aux < 0 || o.aux == 1 {
		return fail(fmt.Errorf("--feature-aux %d, want at least 2", o.aux))
	}
	if err := feature.Check(o.attacks); err != nil {
		return fail(err)
	}
	var figs map[string]float64
	if o.passive {
		cfg, split, bottom, err := netrun.LoadPassive(o.run)
		if err != nil {
			return fail(err)
		}
		c := cfg.Config
		c.FeatureAttacks = o.attacks
		if o.aux > 0 {
			c.FeatureAux = o.aux
		}
		train, _ := data.SplitValidation(split.Train, c.Seed, c.ValFrac)
		if figs, err = run.FeatureFigures(c, &data.Split{Train: train, Test: split.Test}, nil, bottom); err != nil {
			return fail(err)
		}
	} else {
		var err error
		if figs, err = run.AttackFeatures(o.run, o.attacks, o.aux); err != nil {
			return fail(err)
		}
	}
	return json.NewEncoder(w).Encode(struct {
		Run      string             `json:"run"`
		Features map[string]float64 `json:"features"`
	}{o.run, figs})
}
