package data

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"

	"github.com/splitguard/splitguard/configkey"
)

// FormatCriteo is Criteo's display-advertising table: label, I1..I13
// (integers), C1..C26 (hashed categories). Both the Kaggle train.txt
// form (tab-separated, no header) and the CSV-with-header form are
// accepted and told apart from the first line.
const FormatCriteo = "criteo"

// Criteo's column layout.
const (
	criteoDense = 13
	criteoCat   = 26
)

func init() {
	RegisterTableFormat(TableFormat{Name: FormatCriteo,
		Help:      "Criteo's display-advertising table: label, I1..I13, C1..C26; train.txt (tab-separated, no header) or CSV with a header",
		Delimiter: delimiterTabOrComma,
		Layout:    criteoLayout,
		LabelCol:  "label",
		Dense:     isCriteoDense,
		Looks: func(first [][]byte, delim byte) string {
			if delim == '\t' && (len(first) == 1+criteoDense+criteoCat || len(first) == criteoDense+criteoCat) {
				return "its " + fmt.Sprint(len(first)) + " tab-separated fields look like Criteo's train.txt"
			}
			return ""
		},
	})
}

// criteoLayout tells a train.txt row (a number or nothing first: no
// header, 40 fields with the label or 39 without) from a header naming
// Criteo's columns.
func criteoLayout(first [][]byte, _ byte, o Options) ([]string, bool, error) {
	f0 := first[0]
	if _, num := parseNumber(f0); len(f0) == 0 || num {
		switch len(first) {
		case 1 + criteoDense + criteoCat:
			return criteoNames(true), false, nil
		case criteoDense + criteoCat:
			return criteoNames(false), false, nil
		}
		return nil, false, configkey.Keyed(fmt.Errorf("first row has %d fields, want %d (label, I1..I13, C1..C26) or %d (no label), or a header: "+
			"this is not a Criteo file; a table of your own is format csv (key format) with a header line naming its columns",
			len(first), 1+criteoDense+criteoCat, criteoDense+criteoCat), "format")
	}
	return nil, true, checkCriteoHeader(first, o)
}

// criteoNames returns Criteo's column names: label (when withLabel),
// I1..I13, C1..C26.
func criteoNames(withLabel bool) []string {
	var names []string
	if withLabel {
		names = append(names, "label")
	}
	for i := 1; i <= criteoDense; i++ {
		names = append(names, "I"+strconv.Itoa(i))
	}
	for i := 1; i <= criteoCat; i++ {
		names = append(names, "C"+strconv.Itoa(i))
	}
	return names
}

// isCriteoDense reports whether name is one of Criteo's integer columns
// I1..I13.
func isCriteoDense(name string) bool {
	if len(name) < 2 || name[0] != 'I' {
		return false
	}
	n, err := strconv.Atoi(name[1:])
	return err == nil && n >= 1 && n <= criteoDense
}

// isCriteoCat reports whether name is one of Criteo's categorical columns
// C1..C26.
func isCriteoCat(name string) bool {
	if len(name) < 2 || name[0] != 'C' {
		return false
	}
	n, err := strconv.Atoi(name[1:])
	return err == nil && n >= 1 && n <= criteoCat
}

// checkCriteoHeader refuses a header line that is not Criteo's: every
// name must be label, I1..I13 or C1..C26, or the label or ID column o
// names.
func checkCriteoHeader(first [][]byte, o Options) error {
	var other []string
	for _, f := range first {
		n := strings.TrimPrefix(strings.TrimSpace(string(f)), "\ufeff")
		if n == "label" || isCriteoDense(n) || isCriteoCat(n) || (n != "" && (n == o.IDCol || n == o.LabelCol)) {
			continue
		}
		other = append(other, n)
	}
	if len(other) == 0 {
		return nil
	}
	return configkey.Keyed(fmt.Errorf("the header names columns that are not Criteo's (label, I1..I13, C1..C26): %s; "+
		"a table of your own is format csv (key format), with its label column (key label)", listNames(other)), "format", "label")
}

// delimiterTabOrComma is a tab when the first line holds one, else a
// comma.
func delimiterTabOrComma(first []byte) byte {
	if bytes.IndexByte(first, '\t') >= 0 {
		return '\t'
	}
	return ','
}
