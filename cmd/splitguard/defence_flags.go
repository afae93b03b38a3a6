package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/splitguard/splitguard/protect"
)

// defenceFlags adds one flag per registered defence parameter (protect's
// registry): the config key with dashes, e.g. --marvell-s for marvell_s.
// A flag that is not given leaves its parameter unset.
func defenceFlags(fs *pflag.FlagSet, p *protect.Params) {
	for _, spec := range protect.Specs() {
		for i, par := range spec.Params {
			help := par.Help + " " + par.Range()
			switch {
			case spec.Role == protect.AddOn && i == 0:
				help += " (turns " + spec.Name + " on)"
			case spec.Role == protect.AddOn:
				help += " (with --" + FlagName(spec.Params[0].Key) + ")"
			default:
				help += " (with --protect " + spec.Name + ")"
			}
			fs.Var(&paramFlag{params: p, par: par}, FlagName(par.Key), help)
		}
	}
}

// FlagName is the command-line spelling of a config key: dashes for
// underscores.
func FlagName(key string) string { return strings.ReplaceAll(key, "_", "-") }

// paramFlag is one defence parameter as a flag.
type paramFlag struct {
	params *protect.Params
	par    protect.Param
}

func (f *paramFlag) String() string {
	if f.params == nil || !f.params.Has(f.par.Key) {
		return ""
	}
	return strconv.FormatFloat((*f.params)[f.par.Key], 'g', -1, 64)
}

func (f *paramFlag) Set(s string) error {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return fmt.Errorf("not a number: %q", s)
	}
	if err := f.par.Check(v); err != nil {
		return err
	}
	if *f.params == nil {
		*f.params = protect.Params{}
	}
	(*f.params)[f.par.Key] = v
	return nil
}

func (f *paramFlag) Type() string {
	if f.par.Int {
		return "int"
	}
	return "float"
}
