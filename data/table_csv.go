package data

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	"github.com/splitguard/splitguard/configkey"
)

// FormatCSV is any CSV (or TSV) file with a header: the label column
// is named by Options.LabelCol, numeric and categorical columns are
// detected from the data unless declared.
const FormatCSV = "csv"

func init() {
	RegisterTableFormat(TableFormat{Name: FormatCSV,
		Help: "a table of your own: CSV or TSV with a header; the label column named (key label), numeric columns detected from the data",
		Delimiter: func(first []byte) byte {
			if bytes.IndexByte(first, '\t') >= 0 && bytes.IndexByte(first, ',') < 0 {
				return '\t'
			}
			return ','
		},
		Layout: func(first [][]byte, delim byte, _ Options) ([]string, bool, error) {
			return nil, true, checkCSVHeader(delim, first)
		},
		DetectKinds: true,
		ImputeMean:  true,
	})
}

// checkCSVHeader refuses a first line that cannot be a generic table's
// header: one whose every field is a number (data, not names), or a single
// field (a separator other than a comma or a tab).
func checkCSVHeader(delim byte, first [][]byte) error {
	if len(first) == 1 {
		return fmt.Errorf("the header line holds a single column %q: a table's fields are separated by commas or tabs", first[0])
	}
	for _, f := range first {
		if _, num := parseNumber(bytes.TrimSpace(f)); !num && len(bytes.TrimSpace(f)) > 0 {
			return nil
		}
	}
	err := errors.New("the first line holds no column names (every field is a number or empty): format csv needs a header line naming the columns")
	if looks := SniffTableFormat(FormatCSV, first, delim); len(looks) > 0 {
		return configkey.Keyed(fmt.Errorf("%w; %s", err, strings.Join(looks, "; ")), "format")
	}
	return err
}
