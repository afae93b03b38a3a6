package main

import (
	"fmt"
	"net"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/splitguard/splitguard/config"
	"github.com/splitguard/splitguard/ui"
)

// tableFlags binds the flags that say how a table is read: the label
// column and its classes, the ID column and the column kinds. Every
// command that reads tables with a config.Config (train, active, passive
// and their inference subcommands) takes them.
func tableFlags(fs *pflag.FlagSet, c *config.Config) {
	fs.StringVar(&c.Label, "label", c.Label, "label column (csv; criteo: label, avazu: click)")
	fs.StringSliceVar((*[]string)(&c.Positive), "positive", c.Positive, "label values of the positive class, comma-separated (default: labels are 0/1)")
	fs.StringSliceVar((*[]string)(&c.Negative), "negative", c.Negative, "label values of the negative class (default with --positive: the one other value; any value in neither list is a bad row)")
	idColFlags(fs, &c.IDCol)
	fs.StringSliceVar(&c.Numeric, "numeric", c.Numeric, "columns to read as numeric (default csv: a column is numeric when every value that is not missing is a number)")
	fs.StringSliceVar(&c.Categorical, "categorical", c.Categorical, "columns to read as categorical")
	fs.StringSliceVar(&c.Ignore, "ignore", c.Ignore, "columns not to load")
}

// idColFlags binds --id-col and its older spelling --id (hidden).
func idColFlags(fs *pflag.FlagSet, p *string) {
	fs.StringVar(p, "id-col", *p, "example-ID column (default: the row number)")
	fs.StringVar(p, "id", *p, "the same as --id-col")
	_ = fs.MarkHidden("id")
}

// addUIFlag adds --ui [ADDR] (the live page; ADDR defaults to
// ui.DefaultAddr) and --ui-addr ADDR. --ui takes its address as --ui=ADDR
// or, with uiArgs as the command's Args, as --ui ADDR.
func addUIFlag(fs *pflag.FlagSet, addr *string) {
	fs.StringVar(addr, "ui", "", "serve a live page with loss, test AUC and leak AUC charts (on "+ui.DefaultAddr+", or on ADDR: --ui ADDR, --ui=ADDR or --ui-addr ADDR)")
	fs.Lookup("ui").NoOptDefVal = ui.DefaultAddr
	fs.Var(&uiAddrFlag{addr}, "ui-addr", "serve the live page on ADDR (implies --ui)")
}

// uiAddrFlag sets the --ui address.
type uiAddrFlag struct{ p *string }

func (f *uiAddrFlag) String() string {
	if f.p == nil {
		return ""
	}
	return *f.p
}
func (f *uiAddrFlag) Set(s string) error {
	if s == "" {
		return fmt.Errorf("empty address")
	}
	*f.p = s
	return nil
}
func (f *uiAddrFlag) Type() string { return "ADDR" }

// uiArgs accepts no positional argument, except the address after a bare
// --ui: pflag does not give an optional-value flag the next argument, so
// `--ui 127.0.0.1:8080` leaves the address as an argument, taken here.
func uiArgs(addr *string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		f := cmd.Flags().Lookup("ui")
		if len(args) == 1 && f != nil && f.Changed && *addr == ui.DefaultAddr && looksLikeAddr(args[0]) {
			*addr = args[0]
			return nil
		}
		if len(args) > 0 {
			return fmt.Errorf("unexpected argument %q: %s takes flags only", strings.Join(args, " "), cmd.CommandPath())
		}
		return nil
	}
}

// looksLikeAddr reports whether s is HOST:PORT or :PORT.
func looksLikeAddr(s string) bool {
	_, port, err := net.SplitHostPort(s)
	return err == nil && port != ""
}
