package main

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/spf13/pflag"

	"github.com/splitguard/splitguard/config"
	"github.com/splitguard/splitguard/rundir"
)

// partiesFlags binds the flags of several passive parties (keys parties
// and aggregation; the per-party defences are set in a config file).
func partiesFlags(fs *pflag.FlagSet, c *config.Config) {
	fs.Var(&partiesValue{p: &c.Parties}, "parties", "several passive parties, one flag each: [NAME=]COL,COL,… its columns (default names p1, p2, …; per-party protect and parameters in a --config file, see docs/methods/multiparty.md)")
	fs.IntVar(&c.SynthParties, "synth-parties", c.SynthParties, "with --synth-rows and no --parties: N passive parties, party 1 the label-bearing columns, the others noise")
	fs.Float64Var(&c.SynthShared, "synth-shared", c.SynthShared, "with --synth-rows: ρ in [0, 1], the share of every synthetic column's latent variance drawn from one factor common to all columns, so that the parties' columns are correlated (0: independent)")
	fs.Float64Var(&c.SynthSharedLabel, "synth-shared-label", c.SynthSharedLabel, "with --synth-shared: r in [0, 1), the label drawn from the common factor (a probit model whose latent has correlation r with it), so that every party's columns carry the label (0: the label apart from the factor)")
	fs.StringVar(&c.Aggregation, "aggregation", c.Aggregation, "several passive parties: how the active combines their embeddings: concat (default), sum, or gated (a weighted sum of embeddings of one width, the weights learned by the active)")
}

// partiesValue is the repeated --parties flag: each value is one party.
type partiesValue struct {
	p   *[]config.Party
	set bool
}

func (v *partiesValue) Type() string { return "party" }

func (v *partiesValue) String() string {
	var out []string
	for _, p := range *v.p {
		out = append(out, formatParty(p))
	}
	return "[" + strings.Join(out, " ") + "]"
}

// Set adds one party; the first value on the command line replaces the
// parties of a config file.
func (v *partiesValue) Set(s string) error {
	p, err := parseParty(s)
	if err != nil {
		return err
	}
	if !v.set {
		*v.p, v.set = nil, true
	}
	*v.p = append(*v.p, p)
	return nil
}

// Append, Replace and GetSlice make the flag a pflag.SliceValue, which
// reapplyFlags carries over onto a config file's values.
func (v *partiesValue) Append(s string) error { return v.Set(s) }

func (v *partiesValue) Replace(ss []string) error {
	*v.p, v.set = nil, true
	for _, s := range ss {
		p, err := parseParty(s)
		if err != nil {
			return err
		}
		*v.p = append(*v.p, p)
	}
	return nil
}

func (v *partiesValue) GetSlice() []string {
	var out []string
	for _, p := range *v.p {
		out = append(out, formatParty(p))
	}
	return out
}

// parseParty reads "[NAME=]COL,COL,…".
func parseParty(s string) (config.Party, error) {
	var p config.Party
	cols := s
	if name, rest, ok := strings.Cut(s, "="); ok {
		p.Name, cols = strings.TrimSpace(name), rest
		if p.Name == "" {
			return p, fmt.Errorf("party %q: an empty name before '='", s)
		}
	}
	for _, c := range strings.Split(cols, ",") {
		if c = strings.TrimSpace(c); c != "" {
			p.Columns = append(p.Columns, c)
		}
	}
	if len(p.Columns) == 0 {
		return p, fmt.Errorf("party %q names no column: want [NAME=]COL,COL,…", s)
	}
	return p, nil
}

func formatParty(p config.Party) string {
	s := strings.Join(p.Columns, ",")
	if p.Name != "" {
		s = p.Name + "=" + s
	}
	return s
}

// printParties prints, for a run with several passive parties, each
// party's and each colluding subset's leak (the union of what its
// members received) and each party's leave-one-party-out gain.
func printParties(w io.Writer, s *rundir.Summary) {
	if len(s.Parties) == 0 {
		return
	}
	names := slices.SortedFunc(maps.Keys(s.Parties), func(a, b string) int {
		if d := len(s.Parties[a].Members) - len(s.Parties[b].Members); d != 0 {
			return d
		}
		return strings.Compare(a, b)
	})
	fmt.Fprintf(w, "\nper passive party (a+b: the colluding parties' pooled gradients; the rows above: all of them together)\n")
	fmt.Fprintf(w, "%-16s %-18s %8s %8s %8s %10s\n", "party", "attack/layer", "q95", "mean", "batches", "gain (val)")
	fmt.Fprintln(w, strings.Repeat("-", 73))
	for _, n := range names {
		p := s.Parties[n]
		gain := "—"
		if p.GainSelected != nil {
			gain = fmt.Sprintf("%.4f", *p.GainSelected)
		}
		for i, k := range slices.Sorted(maps.Keys(p.Leak)) {
			l := p.Leak[k]
			g := ""
			if i == 0 {
				g = gain
			}
			fmt.Fprintf(w, "%-16s %-18s %8.4f %8.4f %8d %10s\n", n, k, l.Q95, l.Mean, l.Batches, g)
		}
	}
}
