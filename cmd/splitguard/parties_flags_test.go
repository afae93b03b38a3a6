package main

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/splitguard/splitguard/config"
)

// TestPartiesFlag checks --parties: named and unnamed parties in order,
// the refusals, and that the flags replace a config file's parties while
// the file's per-party protection of a party the flags do not name is
// dropped with it.
func TestPartiesFlag(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []config.Party
		err  string
	}{
		{[]string{"--parties", "inf=C1,C2", "--parties", "C3, C4"}, []config.Party{{Name: "inf", Columns: []string{"C1", "C2"}}, {Columns: []string{"C3", "C4"}}}, ""},
		{[]string{"--parties", "x="}, nil, `party "x=" names no column`},
		{[]string{"--parties", "=C1"}, nil, "an empty name"},
	} {
		var c config.Config
		fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
		partiesFlags(fs, &c)
		err := fs.Parse(tc.args)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%v: got %v, want an error containing %q", tc.args, err, tc.err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(c.Parties, tc.want) {
			t.Errorf("%v: got %+v, %v; want %+v", tc.args, c.Parties, err, tc.want)
		}
	}
	path := filepath.Join(t.TempDir(), "run.yaml")
	file := "parties:\n  - {name: a, columns: [C1], protect: max_norm}\n  - {name: b, columns: [C2]}\naggregation: sum\n"
	if err := os.WriteFile(path, []byte(file), 0o644); err != nil {
		t.Fatal(err)
	}
	fromFile, err := config.LoadFile(path, config.Default())
	if err != nil {
		t.Fatal(err)
	}
	if len(fromFile.Parties) != 2 || fromFile.Parties[0].Protect != "max_norm" || fromFile.Aggregation != "sum" {
		t.Fatalf("config file parties %+v aggregation %q", fromFile.Parties, fromFile.Aggregation)
	}
	cmd := newTrainCmd()
	if err := cmd.ParseFlags([]string{"--config", path, "--parties", "c=C5", "--parties", "d=C6"}); err != nil {
		t.Fatal(err)
	}
	got, err := resolveConfig(cmd.Flags(), path, config.Default())
	if err != nil {
		t.Fatal(err)
	}
	want := []config.Party{{Name: "c", Columns: []string{"C5"}}, {Name: "d", Columns: []string{"C6"}}}
	if !reflect.DeepEqual(got.Parties, want) || got.Aggregation != "sum" {
		t.Fatalf("flags over the file: parties %+v aggregation %q, want %+v and the file's sum", got.Parties, got.Aggregation, want)
	}
}
