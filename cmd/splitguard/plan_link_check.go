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
// transport's overhead and processor time as measured through the proxy,
// and the parties sharing --shared-cores cores, or when it is not given
// those found free just before each run (step.LinkRun.FreeCores): the
// check runs them all here, so --host-cores, which plans hosts of their
// own, does not apply to it.
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
		c.Overhead, c.CPU.Transport, c.SharedCores = r.Overhead, r.OverheadCPU, checkCores(o, r)
		c.HostCores = 0 // one process, one machine: never hosts of their own
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

// checkCores is the number of cores the check's prediction of run r
// takes the parties, the transport and the proxy to share: --shared-cores,
// or those found free for this process just before the run.
func checkCores(o planLinkOptions, r step.LinkRun) float64 {
	if o.SharedCores > 0 {
		return o.SharedCores
	}
	return r.FreeCores
}

// sharedNote says how many cores the check's predictions take as shared
// (and, with --host-cores, that the check does not plan hosts of their
// own).
func sharedNote(o planLinkOptions) string {
	if o.HostCores > 0 {
		return fmt.Sprintf("; --host-cores %g not used: both parties run in this process", o.HostCores) + sharedCoresNote(o)
	}
	return sharedCoresNote(o)
}

// sharedCoresNote says how many cores the check's predictions take as
// shared.
func sharedCoresNote(o planLinkOptions) string {
	switch {
	case o.SharedCores > 0:
		return fmt.Sprintf("; the parties, the transport and the proxy share %g cores (--shared-cores)", o.SharedCores)
	case step.SharedCores() > 0:
		return fmt.Sprintf("; the parties, the transport and the proxy share the cores found free just before each run, of %d", step.SharedCores())
	}
	return "; no processor time on this system: the parties taken as on hosts of their own"
}
