package main

import (
	"encoding/json"
	"fmt"
	"math"
	"runtime"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/splitguard/splitguard/bench/step"
	"github.com/splitguard/splitguard/config"
	"github.com/splitguard/splitguard/transport/linkplan"
	"github.com/splitguard/splitguard/transport/wire"
)

func init() { subcommands = append(subcommands, newPlanLinkCmd) }

// planLinkOptions are the flags of `splitguard plan-link` beyond the run's.
type planLinkOptions struct {
	RTT              time.Duration
	UpMbit, DownMbit float64
	Encodings        []string
	Staleness, Local []int
	Steps, Warmup    int
	JSON             bool
	Check            bool
	// PassiveMS and ActiveMS, when positive, replace the measured compute
	// of each party per step.
	PassiveMS, ActiveMS float64
	// SharedCores, when positive, plans both parties and the transport on
	// one machine of that many cores (linkplan.Costs.SharedCores).
	SharedCores float64
	// HostCores, when positive, plans each party on a host of its own of
	// that many cores, shared by its compute and its end of the transport
	// (linkplan.Costs.HostCores).
	HostCores float64
	// MaxLinkRatio is the largest ratio of an option's time over the link
	// to its time without it that the recommendation accepts.
	MaxLinkRatio float64
	configFile   string
}

func newPlanLinkCmd() *cobra.Command {
	cfg := config.Default()
	o := planLinkOptions{}
	cmd := &cobra.Command{
		Use:   "plan-link --rtt 20ms --up 100 --down 100 [run flags]",
		Short: "Predict the time per training step over a wide-area link for each encoding, staleness and local-step option",
		Long: `plan-link measures what one training step of the run the flags describe costs
(model, batch, cut, protection; synthetic Criteo-shaped rows unless --data): both
parties in this process give each party's compute per step, grpcnet's encoding gives
the bytes each way, and an exchange of the same messages over mutual TLS on loopback
gives the transport's overhead; each encoding (both directions alike) is measured,
with error feedback of the lossy ones' gradients under --wire-feedback.
It then predicts the time per exchange and per update over the link --rtt/--up/--down
for every encoding × staleness (--plan-staleness) × local steps (--plan-local-steps), with the
model of docs/methods/wan.md ("The planner"):

  k = 0, Q = 1:  t = C_p + C_a + o + RTT + B_f/up + B_b/down
  in general:    P = Q·C_p + R (R, the passive's recompute of a forward, only when k > 0), A = Q·C_a,
                 T = max(P, A, B_f/up, B_b/down, (P + A + o + RTT + B_f/up + B_b/down)/(k+1))
                 per exchange, T/Q per update.

--check then runs every planned option (each encoding, staleness and local steps) over
grpcnet with mutual TLS through a loopback proxy that emulates the link (half the round
trip each way, a token bucket per direction) and prints each one's prediction beside
the measured step and its split: the passive's compute, the active's, and the link's
share (the synchronous protocol: the rest of the exchange; with staleness: the
passive's wait for an answer). Its predictions take the transport's overhead through
the proxy, and the parties, the transport and the proxy sharing the cores found free for
this process just before each run (of GOMAXPROCS; or --shared-cores): one machine cannot
show what two hosts overlap.

--shared-cores N plans both parties and the transport on one machine of N cores
(without it: each party on a host of its own). Every part's processor time then comes
out of the same N cores, and T is also at least
  W/N,  W = Q·(W_p + W_a) + W_r (k > 0 only) + W_o,
the processor times (not wall times; measured under this process's GOMAXPROCS, internal/par's
spinning workers included, as in a run) of each party's step, the
recompute and the transport (both ends) per exchange.

--host-cores N plans each party on a host of its own of N cores: a party's compute and
its end of the transport share its cores. T is then also at least
  (Q·W_p + W_r (k > 0 only) + W_o/2)/N   (the passive's host)
  (Q·W_a + W_o/2)/N                      (the active's host),
half of the transport's processor time to each end (an approximation: each end encodes
what it sends and decodes what it receives). Measure under GOMAXPROCS=N (this process's
processor times are its). Without --host-cores (and without --shared-cores) each party's
compute is bounded by its wall time only, which on hosts of one or two cores leaves out
the transport's compression and TLS. --check does not use it: the check runs both
parties in this process, and its predictions take them as sharing this machine's cores.

Beside each prediction: the same option's predicted time on plain loopback (no round
trip, no bandwidth limit, the same compute and overhead) and the ratio of the two. The
plan ends with a recommendation: the most exact option whose ratio is at most
--max-link-ratio (1.25): the least staleness, then the fewest local steps, then the
encoding with the most bytes (the least rounding). Staleness, local steps and rounding
change what the model learns: check the recommendation's AUC on your data
(docs/methods/wan.md, "Which options for a WAN").

--passive-ms and --active-ms replace a party's measured compute per step, for parties on other
hosts than this one: the compute_ms that each party's log of a real run ends with.

Both parties run on this machine while it measures: on a loaded machine the compute
figures are its, not those of two dedicated hosts.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			final, err := resolveConfig(cmd.Flags(), o.configFile, cfg)
			if err != nil {
				return err
			}
			return runPlanLink(cmd, final, o)
		},
	}
	trainFlags(cmd.Flags(), &cfg)
	f := cmd.Flags()
	f.StringVar(&o.configFile, "config", "", "YAML config file of the run; its keys mirror the flags, flags given on the command line win")
	f.DurationVar(&o.RTT, "rtt", 20*time.Millisecond, "round trip time of the link")
	f.Float64Var(&o.UpMbit, "up", 100, "bandwidth passive → active in Mbit/s (0: unlimited)")
	f.Float64Var(&o.DownMbit, "down", 100, "bandwidth active → passive in Mbit/s (0: unlimited)")
	f.StringSliceVar(&o.Encodings, "encodings", wire.Names(), "wire encodings to plan, each for both directions")
	f.IntSliceVar(&o.Staleness, "plan-staleness", []int{0, 1, 2, 4}, "staleness values k to plan (a run's own is --staleness)")
	f.IntSliceVar(&o.Local, "plan-local-steps", []int{1, 2, 4}, "local steps per exchange Q to plan (a run's own is --local-steps)")
	f.IntVar(&o.Steps, "steps", 20, "timed steps per encoding (medians are used)")
	f.IntVar(&o.Warmup, "warmup", 3, "untimed steps first")
	f.BoolVar(&o.JSON, "json", false, "print the measured costs and the predictions as one JSON object")
	f.Float64Var(&o.PassiveMS, "passive-ms", 0, "the passive party's compute per step in ms, instead of this machine's (e.g. compute_ms of a run's passive log on its own host)")
	f.Float64Var(&o.ActiveMS, "active-ms", 0, "the active party's compute per step in ms, instead of this machine's (e.g. compute_ms of a run's active log)")
	f.Float64Var(&o.SharedCores, "shared-cores", 0, "plan both parties and the transport on one machine of this many free cores, fractional where other work takes part of them (0: each party on a host of its own); with --check, the cores the check's predictions take as shared instead of those found free before each run")
	f.Float64Var(&o.HostCores, "host-cores", 0, "plan each party on a host of its own of this many cores, which its compute and its end of the transport share; measure under GOMAXPROCS of that many (0: each party's compute bounded by its wall time only); not used by --check")
	f.Float64Var(&o.MaxLinkRatio, "max-link-ratio", 1.25, "recommend the most exact option whose predicted time over the link is at most this many times its predicted time on plain loopback (≥ 1)")
	f.BoolVar(&o.Check, "check", false, "also run every planned option (encodings × --plan-staleness × --plan-local-steps) over an emulated link of these settings (a loopback proxy) and print the measured time beside the prediction")
	return cmd
}

// planRow is one predicted option.
type planRow struct {
	Encoding   string  `json:"encoding"`
	Staleness  int     `json:"staleness"`
	LocalSteps int     `json:"local_steps"`
	MSExchange float64 `json:"ms_per_exchange"`
	MSUpdate   float64 `json:"ms_per_update"`
	Bound      string  `json:"bound"`
	BytesPerEx int64   `json:"bytes_per_exchange"`
	RoundMS    float64 `json:"round_ms"`
	// LoopbackMS is the same option's prediction without the link (no
	// round trip, no bandwidth limit), OverLoopback MSExchange over it.
	LoopbackMS   float64 `json:"loopback_ms_per_exchange"`
	OverLoopback float64 `json:"link_over_loopback"`
}

// checkRow is one option's step over the emulated link.
type checkRow struct {
	Encoding    string  `json:"encoding"`
	Staleness   int     `json:"staleness"`
	LocalSteps  int     `json:"local_steps"`
	PredictedMS float64 `json:"predicted_ms"`
	Bound       string  `json:"bound"`
	MeasuredMS  float64 `json:"measured_ms"`
	PassiveMS   float64 `json:"passive_ms"`
	ActiveMS    float64 `json:"active_ms"`
	LinkMS      float64 `json:"link_ms"`
}

// costRow is one encoding's measured costs.
type costRow struct {
	Encoding   string  `json:"encoding"`
	PassiveMS  float64 `json:"passive_ms"`
	ActiveMS   float64 `json:"active_ms"`
	Recompute  float64 `json:"recompute_ms"`
	OverheadMS float64 `json:"overhead_ms"`
	Forward    int64   `json:"bytes_forward"`
	Backward   int64   `json:"bytes_backward"`
	// The processor times (linkplan.CPUTimes).
	CPUPassive   float64 `json:"cpu_passive_ms"`
	CPUActive    float64 `json:"cpu_active_ms"`
	CPURecompute float64 `json:"cpu_recompute_ms"`
	CPUTransport float64 `json:"cpu_transport_ms"`
}

func ms(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e6 }

func runPlanLink(cmd *cobra.Command, cfg config.Config, o planLinkOptions) error {
	if o.RTT < 0 || o.UpMbit < 0 || o.DownMbit < 0 {
		return fmt.Errorf("plan-link: --rtt %v, --up %g and --down %g must not be negative", o.RTT, o.UpMbit, o.DownMbit)
	}
	if o.PassiveMS < 0 || o.ActiveMS < 0 {
		return fmt.Errorf("plan-link: --passive-ms %g and --active-ms %g must not be negative", o.PassiveMS, o.ActiveMS)
	}
	if !(o.SharedCores >= 0 && o.SharedCores <= math.MaxFloat64) {
		return fmt.Errorf("plan-link: --shared-cores %g, want 0 (hosts of their own) or more", o.SharedCores)
	}
	if o.SharedCores > 0 && (o.PassiveMS > 0 || o.ActiveMS > 0) {
		return fmt.Errorf("plan-link: --shared-cores plans both parties on one machine with this machine's processor times; it does not go with --passive-ms or --active-ms")
	}
	if !(o.HostCores >= 0 && o.HostCores <= math.MaxFloat64) {
		return fmt.Errorf("plan-link: --host-cores %g, want 0 (not modelled) or more", o.HostCores)
	}
	if o.HostCores > 0 && o.SharedCores > 0 {
		return fmt.Errorf("plan-link: --host-cores plans each party on a host of its own, --shared-cores both on one machine; give one of them")
	}
	if o.HostCores > 0 && (o.PassiveMS > 0 || o.ActiveMS > 0) {
		return fmt.Errorf("plan-link: --host-cores plans each party's host with this machine's processor times; it does not go with --passive-ms or --active-ms, which replace wall times only")
	}
	if o.Check && (o.PassiveMS > 0 || o.ActiveMS > 0) {
		return fmt.Errorf("plan-link: --check measures this machine's compute; it does not go with --passive-ms or --active-ms")
	}
	if !(o.MaxLinkRatio >= 1 && o.MaxLinkRatio <= math.MaxFloat64) {
		return fmt.Errorf("plan-link: --max-link-ratio %g, want 1 or more", o.MaxLinkRatio)
	}
	if o.Steps < 1 || o.Warmup < 0 {
		return fmt.Errorf("plan-link: --steps %d must be positive and --warmup %d non-negative", o.Steps, o.Warmup)
	}
	for _, k := range o.Staleness {
		if k < 0 {
			return fmt.Errorf("plan-link: --plan-staleness %d, want 0 or more", k)
		}
	}
	for _, q := range o.Local {
		if q < 1 {
			return fmt.Errorf("plan-link: --plan-local-steps %d, want 1 or more", q)
		}
	}
	run, err := cfg.Wire() // --wire-compression applies to every encoding planned
	if err != nil {
		return fmt.Errorf("plan-link: %w", err)
	}
	var encs []wire.Encodings
	for _, n := range o.Encodings {
		e, err := wire.Parse(n)
		if err != nil {
			return fmt.Errorf("plan-link: --encodings: %w", err)
		}
		encs = append(encs, wire.Encodings{Embedding: e, Gradient: e, Compression: run.Compression})
	}
	if len(encs) == 0 {
		return fmt.Errorf("plan-link: --encodings names none")
	}
	if cfg.Data == "" && cfg.SynthRows == 0 {
		// Enough synthetic rows that every timed step is a full batch.
		batch := max(cfg.Batch, 2)
		cfg.SynthRows = (o.Warmup+o.Steps+2)*batch*10/9 + batch
	}
	cfg.Baseline, cfg.EvalEvery, cfg.EarlyStop, cfg.ValFrac = false, 0, 0, 0
	if cfg.Out == "" {
		cfg.Out = "plan-link" // Validate wants one; nothing is written
	}
	cfg.Resolve()
	// --encodings replaces the run's wire keys; --wire-feedback then
	// applies to the lossy ones among them.
	ef := cfg.WireFeedback
	cfg.WireEmbedding, cfg.WireGradient, cfg.WireFeedback = "f32", "f32", false
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("plan-link: %w", err)
	}
	cfg.WireFeedback = ef
	measured, err := step.MeasureLink(cmd.Context(), step.LinkSpec{Config: &cfg, Encodings: encs, Steps: o.Steps, Warmup: o.Warmup})
	if err != nil {
		return fmt.Errorf("plan-link: %w", err)
	}
	link := linkplan.Link{RTT: o.RTT, Up: o.UpMbit * 1e6 / 8, Down: o.DownMbit * 1e6 / 8}
	var costs []costRow
	var rows []planRow
	for i := range measured {
		if o.PassiveMS > 0 {
			measured[i].Costs.Passive = time.Duration(o.PassiveMS * 1e6)
		}
		if o.ActiveMS > 0 {
			measured[i].Costs.Active = time.Duration(o.ActiveMS * 1e6)
		}
	}
	for _, m := range measured {
		c := m.Costs
		c.SharedCores, c.HostCores = o.SharedCores, o.HostCores
		if c.SharedCores > 0 && c.CPU == (linkplan.CPUTimes{}) {
			return fmt.Errorf("plan-link: --shared-cores: this system gives no processor time to measure")
		}
		if c.HostCores > 0 && c.CPU == (linkplan.CPUTimes{}) {
			return fmt.Errorf("plan-link: --host-cores: this system gives no processor time to measure")
		}
		costs = append(costs, costRow{m.Wire.Embedding.String(), ms(c.Passive), ms(c.Active), ms(c.Recompute), ms(c.Overhead), c.Forward, c.Backward,
			ms(c.CPU.Passive), ms(c.CPU.Active), ms(c.CPU.Recompute), ms(c.CPU.Transport)})
		for _, k := range o.Staleness {
			for _, q := range o.Local {
				p, err := linkplan.Predict(link, c, linkplan.Schedule{Staleness: k, LocalSteps: q})
				if err != nil {
					return fmt.Errorf("plan-link: %w", err)
				}
				lb, err := linkplan.Predict(linkplan.Link{}, c, linkplan.Schedule{Staleness: k, LocalSteps: q})
				if err != nil {
					return fmt.Errorf("plan-link: %w", err)
				}
				rows = append(rows, planRow{m.Wire.Embedding.String(), k, q, ms(p.PerExchange), ms(p.PerUpdate), string(p.Bound), c.Forward + c.Backward, ms(p.Round),
					ms(lb.PerExchange), float64(p.PerExchange) / float64(lb.PerExchange)})
			}
		}
	}
	rec := recommend(rows, o.MaxLinkRatio)
	var checks []checkRow
	if o.Check {
		if checks, err = checkPlanLink(cmd, cfg, o, encs, measured, link); err != nil {
			return err
		}
	}
	out := cmd.OutOrStdout()
	if o.JSON {
		return json.NewEncoder(out).Encode(map[string]any{
			"rtt_ms": ms(o.RTT), "up_mbit": o.UpMbit, "down_mbit": o.DownMbit,
			"model": cfg.Model, "batch": cfg.Batch, "wire_compression": run.Compression.String(), "cut_width": cfg.CutDim(), "shared_cores": o.SharedCores, "host_cores": o.HostCores,
			"measured": costs, "predicted": rows, "check": checks,
			"max_link_ratio": o.MaxLinkRatio, "recommended": rec,
		})
	}
	fmt.Fprintf(out, "link: round trip %v, up %s, down %s; model %s, batch %d, cut width %d\n",
		o.RTT, mbit(o.UpMbit), mbit(o.DownMbit), cfg.Model, cfg.Batch, cfg.CutDim())
	fmt.Fprintf(out, "measured on this machine (medians of %d steps; overhead: the same messages over mutual TLS on loopback; processor times: means under GOMAXPROCS %d)%s%s:\n", o.Steps, runtime.GOMAXPROCS(0), given(o), compressed(run.Compression))
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "encoding\tpassive ms\tactive ms\trecompute ms\toverhead ms\tbytes →\tbytes ←\tprocessor ms: passive\tactive\trecompute\ttransport\t")
	for _, c := range costs {
		fmt.Fprintf(tw, "%s\t%.2f\t%.2f\t%.2f\t%.2f\t%d\t%d\t%.2f\t%.2f\t%.2f\t%.2f\t\n", c.Encoding, c.PassiveMS, c.ActiveMS, c.Recompute, c.OverheadMS, c.Forward, c.Backward,
			c.CPUPassive, c.CPUActive, c.CPURecompute, c.CPUTransport)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(out, "predicted (k: staleness, Q: local steps per exchange; %s):\n", hosts(o))
	tw = tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "encoding\tk\tQ\tms/exchange\tms/update\tbound\tloopback ms/exchange\tlink ÷ loopback\t")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%.1f\t%.1f\t%s\t%.1f\t%.2f\t\n", r.Encoding, r.Staleness, r.LocalSteps, r.MSExchange, r.MSUpdate, r.Bound, r.LoopbackMS, r.OverLoopback)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if rec != nil {
		fmt.Fprintf(out, "recommended (the most exact option within %g× its loopback time): --wire-embedding %s --wire-gradient %s%s --staleness %d --local-steps %d (%.1f ms/exchange, %.2f× loopback); check its AUC on your data\n",
			o.MaxLinkRatio, rec.Encoding, rec.Encoding, compressionFlag(run.Compression), rec.Staleness, rec.LocalSteps, rec.MSExchange, rec.OverLoopback)
	} else {
		fmt.Fprintf(out, "recommended: none of the planned options is within %g× its loopback time; plan more staleness (--plan-staleness), local steps (--plan-local-steps) or fewer bytes (--encodings)\n", o.MaxLinkRatio)
	}
	if len(checks) == 0 {
		return nil
	}
	fmt.Fprintf(out, "check over the emulated link (every option; medians; overhead through the proxy%s):\n", sharedNote(o))
	tw = tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "encoding\tk\tQ\tpredicted ms\tmeasured ms\toff\tbound\tpassive ms\tactive ms\tlink ms\t")
	for _, c := range checks {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%.1f\t%.1f\t%+.0f%%\t%s\t%.1f\t%.1f\t%.1f\t\n", c.Encoding, c.Staleness, c.LocalSteps, c.PredictedMS, c.MeasuredMS, 100*(c.PredictedMS/c.MeasuredMS-1), c.Bound, c.PassiveMS, c.ActiveMS, c.LinkMS)
	}
	return tw.Flush()
}

// recommend returns the most exact of rows whose time over the link is at
// most maxRatio times its time on loopback — the least staleness, then
// the fewest local steps, then the most bytes (the least rounding) — or
// nil when none is.
func recommend(rows []planRow, maxRatio float64) *planRow {
	var best *planRow
	for i := range rows {
		r := &rows[i]
		if !(r.OverLoopback <= maxRatio) {
			continue
		}
		if best == nil || r.Staleness < best.Staleness ||
			r.Staleness == best.Staleness && (r.LocalSteps < best.LocalSteps ||
				r.LocalSteps == best.LocalSteps && r.BytesPerEx > best.BytesPerEx) {
			best = r
		}
	}
	return best
}

// mbit writes a bandwidth flag's value for the header.
func mbit(v float64) string {
	if v == 0 {
		return "unlimited"
	}
	return strconv.FormatFloat(v, 'g', -1, 64) + " Mbit/s"
}

// given names the compute figures the flags gave instead of measuring.
func given(o planLinkOptions) string {
	switch {
	case o.PassiveMS > 0 && o.ActiveMS > 0:
		return ", compute as given by --passive-ms and --active-ms"
	case o.PassiveMS > 0:
		return ", the passive's compute as given by --passive-ms"
	case o.ActiveMS > 0:
		return ", the active's compute as given by --active-ms"
	}
	return ""
}

// compressed says, in the measured table's heading, that the messages
// were compressed.
func compressed(c wire.Compression) string {
	if c == wire.None {
		return ""
	}
	return fmt.Sprintf(", messages compressed with %v (bytes, overhead and transport time include it)", c)
}

// compressionFlag is the recommendation's --wire-compression, when not
// none.
func compressionFlag(c wire.Compression) string {
	if c == wire.None {
		return ""
	}
	return " --wire-compression " + c.String()
}

// hosts says where the plan puts the parties.
func hosts(o planLinkOptions) string {
	switch {
	case o.SharedCores > 0:
		return fmt.Sprintf("both parties and the transport on one machine of %g cores", o.SharedCores)
	case o.HostCores > 0:
		return fmt.Sprintf("each party on a host of its own of %g cores, shared by its compute and its end of the transport", o.HostCores)
	}
	return "each party on a host of its own"
}
