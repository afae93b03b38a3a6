package main

import (
	"fmt"
	"strings"

	"github.com/spf13/pflag"

	"github.com/splitguard/splitguard/config"
)

// partiesFlags binds the flags of several passive parties (keys parties
// and aggregation; the per-party defences are set in a config file).
func partiesFlags(fs *pflag.FlagSet, c *config.Config) {
	fs.Var(&partiesValue{p: &c.Parties}, "parties", "several passive parties, one flag each: [NAME=]COL,COL,… its columns (default names p1, p2, …; per-party protect and parameters in a --config file, see docs/methods/multiparty.md)")
	fs.StringVar(&c.Aggregation, "aggregation", c.Aggregation, "several passive parties: how the active combines their embeddings, concat (default) or sum")
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
