package data

import (
	"fmt"
	"strings"

	"github.com/splitguard/splitguard/internal/registry"
)

// TableFormat is a table format's entry in the registry: what [Load] and
// [Inspect] need to know of a file in it beyond the one streaming reader
// they share. Each format is one file that registers itself in init()
// (criteo, avazu, csv), as image sets register with [RegisterImageFormat].
type TableFormat struct {
	// Name is the format's name (key format), lower case.
	Name string
	// Help is one line for the command line's help.
	Help string
	// Delimiter picks the field separator (',' or '\t') of a file whose
	// first line is first (the line's bytes, without the newline).
	Delimiter func(first []byte) byte
	// Layout reads a file's first line, split into its fields: names are
	// the columns when the line is data (header false), and are ignored
	// when the line is a header naming them (header true). An error says
	// why the line cannot start a file of the format. Nil: the first line
	// is always a header.
	Layout func(first [][]byte, delim byte, o Options) (names []string, header bool, err error)
	// LabelCol is the label column when the options name none; empty: the
	// options must name one (Options.LabelCol) or load none (NoLabel).
	LabelCol string
	// IDCol is the ID column when the options name none, and then must be
	// in the file; empty: rows are numbered unless the options name one.
	IDCol string
	// UintIDs says that IDs must be unsigned decimal integers; otherwise
	// an ID that is not one is hashed ([HashID]).
	UintIDs bool
	// Dense says which columns are numeric when the options do not declare
	// them (Options.Dense, Options.Categorical); the others are
	// categorical. Nil with DetectKinds: decided from the data. Nil
	// without: every column is categorical.
	Dense func(name string) bool
	// DetectKinds decides the kind of every undeclared column from the
	// data: numeric when every value that is not missing is a finite
	// number ([IsMissing]).
	DetectKinds bool
	// ImputeMean gives a missing numeric value the column's training mean
	// (computed exactly); otherwise it reads as 0, as the papers' Criteo
	// and Avazu pipelines did.
	ImputeMean bool
	// Looks, when set, says whether the first line of a file that another
	// format refuses looks like this format's, as a phrase for that error
	// ("its 40 tab-separated fields look like Criteo's train.txt"), or ""
	// (see [SniffTableFormat]).
	Looks func(first [][]byte, delim byte) string
}

var tableFormats registry.Map[TableFormat]

// RegisterTableFormat makes [Load] and [Inspect] read f.Name. It is meant
// to be called from the init function of the file that implements the
// format. It panics when the name is empty, not lower case or taken, or
// the format has no Delimiter: programming errors.
func RegisterTableFormat(f TableFormat) {
	if f.Name == "" || f.Name != strings.ToLower(strings.TrimSpace(f.Name)) || f.Delimiter == nil {
		panic(fmt.Sprintf("data: RegisterTableFormat(%q): want a lower-case name and a Delimiter", f.Name))
	}
	if !tableFormats.Add(f.Name, f) {
		panic(fmt.Sprintf("data: table format %q registered twice", f.Name))
	}
}

// LookupTableFormat returns the registered table format called name.
func LookupTableFormat(name string) (TableFormat, bool) { return tableFormats.Lookup(name) }

// TableFormats returns the names of the registered table formats, sorted.
func TableFormats() []string { return tableFormats.Names() }

// tableFormat returns the registered format called name, or an error
// listing the registered ones.
func tableFormat(name string) (TableFormat, error) {
	if f, ok := LookupTableFormat(name); ok {
		return f, nil
	}
	names := TableFormats()
	want := strings.Join(names, ", ")
	if n := len(names); n > 1 {
		want = strings.Join(names[:n-1], ", ") + " or " + names[n-1]
	}
	return TableFormat{}, fmt.Errorf("unknown format %q (want %s)", name, want)
}

// SniffTableFormat returns, for a first line that format refuses, the
// other registered formats whose Looks recognises it, each as "PHRASE (key
// format NAME)", in name order; an error quoting them is keyed format
// (configkey.Keyed), so that a caller names the key its own way.
func SniffTableFormat(format string, first [][]byte, delim byte) []string {
	var out []string
	for _, name := range TableFormats() {
		f, _ := LookupTableFormat(name)
		if name == format || f.Looks == nil {
			continue
		}
		if phrase := f.Looks(first, delim); phrase != "" {
			out = append(out, phrase+" (key format "+name+")")
		}
	}
	return out
}

// sniffDelimiter picks the field separator of a table in format from its
// first line (a format [Options.withDefaults] accepted).
func sniffDelimiter(format string, first []byte) byte {
	f, _ := LookupTableFormat(format)
	return f.Delimiter(first)
}
