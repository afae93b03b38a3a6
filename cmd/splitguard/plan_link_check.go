package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/splitguard/splitguard/bench/step"
	"github.com/splitguard/splitguard/config"
	"github.com/splitguard/splitguard/transport/linkplan"
	"github.com/splitguard/splitguard/transport/linktest"
	"github.com/splitguard/splitguard/transport/wire"
)

// checkPlanLink runs every planned option (encodings × --plan-staleness ×
// --plan-local-steps) over the emulated link and returns each one's
// prediction beside its measured step. The predictions take the
// transport's overhead as measured through the proxy, and shared
// processors on a small machine (step.SharesProcessors).
func checkPlanLink(cmd *cobra.Command, cfg config.Config, o planLinkOptions, encs []wire.Encodings, measured []step.LinkCosts, link linkplan.Link) ([]checkRow, error) {
	var scheds []linkplan.Schedule
	for _, k := range o.Staleness {
		for _, q := range o.Local {
			scheds = append(scheds, linkplan.Schedule{Staleness: k, LocalSteps: q})
		}
	}
	up := linktest.Link{Delay: o.RTT / 2, BytesPerSecond: link.Up}
	down := linktest.Link{Delay: o.RTT / 2, BytesPerSecond: link.Down}
	runs, err := step.MeasureOverLink(cmd.Context(), step.LinkSpec{Config: &cfg, Encodings: encs, Schedules: scheds, Steps: o.Steps, Warmup: o.Warmup}, up, down)
	if err != nil {
		return nil, fmt.Errorf("plan-link: --check: %w", err)
	}
	var checks []checkRow
	for i, r := range runs {
		c := measured[i/len(scheds)].Costs // runs are encoding-major
		c.Overhead, c.Shared = r.Overhead, step.SharesProcessors()
		p, err := linkplan.Predict(link, c, r.Schedule)
		if err != nil {
			return nil, fmt.Errorf("plan-link: %w", err)
		}
		s := r.Split
		checks = append(checks, checkRow{r.Wire.Embedding.String(), r.Schedule.Staleness, r.Schedule.LocalSteps,
			ms(p.PerExchange), string(p.Bound), ms(s.Step), ms(s.Passive), ms(s.Active), ms(s.Link)})
	}
	return checks, nil
}

// sharedNote says when the check's predictions take the processors as
// shared.
func sharedNote() string {
	if step.SharesProcessors() {
		return "; fewer than 4 cores here: the parties, the transport and the proxy share them"
	}
	return ""
}
