package data

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Criteo's column layout.
const (
	criteoDense = 13
	criteoCat   = 26
)

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

// idMode says how an ID field becomes a uint64.
type idMode uint8

const (
	idRow    idMode = iota // no ID column: the 0-based data row number
	idUint                 // must be an unsigned decimal integer (Avazu)
	idOrHash               // unsigned decimal integer, else HashID of the string
)

// schema is the resolved layout of a table: where the label and ID are
// and the kind of every field.
type schema struct {
	format  string
	delim   byte
	header  bool
	names   []string
	kinds   []ColumnKind
	label   int // field index, -1 when no labels are loaded
	id      int // field index, -1 when IDs are row numbers
	idMode  idMode
	pending []int // fields whose kind must be detected from the data
}

// sniffDelimiter picks the field separator of a table from its first line.
func sniffDelimiter(format string, first []byte) byte {
	switch format {
	case FormatAvazu:
		return ','
	case FormatCriteo:
		if bytes.IndexByte(first, '\t') >= 0 {
			return '\t'
		}
		return ','
	default:
		if bytes.IndexByte(first, '\t') >= 0 && bytes.IndexByte(first, ',') < 0 {
			return '\t'
		}
		return ','
	}
}

// resolveSchema lays out a table from its first line's fields. It reports
// whether the first line is a header (and so not data).
func resolveSchema(o Options, delim byte, first [][]byte) (*schema, error) {
	s := &schema{format: o.Format, delim: delim, label: -1, id: -1}
	switch o.Format {
	case FormatCriteo:
		f0 := first[0]
		if _, num := parseNumber(f0); len(f0) == 0 || num {
			switch len(first) {
			case 1 + criteoDense + criteoCat:
				s.names = criteoNames(true)
			case criteoDense + criteoCat:
				s.names = criteoNames(false)
			default:
				return nil, fmt.Errorf("first row has %d fields, want %d (label, I1..I13, C1..C26) or %d (no label), or a header: "+
					"this is not a Criteo file; a table of your own is format csv (key format) with a header line naming its columns",
					len(first), 1+criteoDense+criteoCat, criteoDense+criteoCat)
			}
		} else {
			s.header = true
			if err := checkCriteoHeader(first, o); err != nil {
				return nil, err
			}
		}
	default:
		s.header = true
	}
	if o.Format == FormatCSV {
		if err := checkCSVHeader(delim, first); err != nil {
			return nil, err
		}
	}
	if s.header {
		s.names = make([]string, len(first))
		for i, f := range first {
			name := strings.TrimSpace(string(f))
			if i == 0 {
				name = strings.TrimPrefix(name, "\ufeff")
			}
			if !utf8.ValidString(name) {
				// The name is saved in the encoding (JSON, which would
				// turn the bytes into U+FFFD) and must match at serving.
				return nil, fmt.Errorf("header field %d (%q) is not valid UTF-8; column names must be UTF-8 text", i+1, name)
			}
			s.names[i] = name
		}
	}
	index := make(map[string]int, len(s.names))
	for i, n := range s.names {
		if n == "" && s.header {
			return nil, fmt.Errorf("header field %d is empty", i+1)
		}
		if j, dup := index[n]; dup {
			return nil, fmt.Errorf("header names column %q twice (fields %d and %d)", n, j+1, i+1)
		}
		index[n] = i
	}
	s.kinds = make([]ColumnKind, len(s.names))
	for i := range s.kinds {
		s.kinds[i] = KindCategorical
	}

	// Label.
	labelCol, explicit := o.LabelCol, o.LabelCol != ""
	if !explicit {
		switch o.Format {
		case FormatCriteo:
			labelCol = "label"
		case FormatAvazu:
			labelCol = "click"
		}
	}
	if labelCol != "" {
		j, ok := index[labelCol]
		switch {
		case ok && o.NoLabel:
			s.kinds[j] = KindIgnored
		case ok:
			s.kinds[j] = KindLabel
			s.label = j
		case !o.NoLabel && explicit:
			return nil, fmt.Errorf("label column %q (key label) is not in the header, which names %s", labelCol, listNames(s.names))
		case !o.NoLabel:
			return nil, fmt.Errorf("no label column %q, the %s format's, in the header, which names %s: name the label column (key label), or if this is a table of your own, read it as format csv (key format)",
				labelCol, o.Format, listNames(s.names))
		}
	} else if o.Format == FormatCSV && !o.NoLabel {
		return nil, fmt.Errorf("no label column named (key label): the header names %s", listNames(s.names))
	}

	// ID.
	idCol := o.IDCol
	if idCol == "" && o.Format == FormatAvazu {
		idCol = "id"
	}
	if idCol != "" {
		j, ok := index[idCol]
		if !ok {
			if o.IDCol != "" || o.Format == FormatAvazu {
				return nil, fmt.Errorf("ID column %q not found", idCol)
			}
		} else {
			if s.kinds[j] == KindLabel {
				return nil, fmt.Errorf("column %q is both the label and the ID", idCol)
			}
			s.kinds[j] = KindID
			s.id = j
			s.idMode = idOrHash
			if o.Format == FormatAvazu {
				s.idMode = idUint
			}
		}
	}

	// Features.
	check := func(what string, names []string) (map[string]bool, error) {
		set := make(map[string]bool, len(names))
		for _, n := range names {
			j, ok := index[n]
			if !ok {
				return nil, fmt.Errorf("%s column %q not found", what, n)
			}
			if k := s.kinds[j]; k == KindLabel || k == KindID {
				return nil, fmt.Errorf("%s column %q is the %s column", what, n, k)
			}
			set[n] = true
		}
		return set, nil
	}
	keep, err := check("requested", o.Columns)
	if err != nil {
		return nil, err
	}
	dense, err := check("dense", o.Dense)
	if err != nil {
		return nil, err
	}
	cat, err := check("categorical", o.Categorical)
	if err != nil {
		return nil, err
	}
	ignore, err := check("ignored", o.Ignore)
	if err != nil {
		return nil, err
	}
	for j, n := range s.names {
		if s.kinds[j] == KindLabel || s.kinds[j] == KindID || (s.kinds[j] == KindIgnored && n == labelCol) {
			continue
		}
		if (o.Columns != nil && !keep[n]) || ignore[n] {
			s.kinds[j] = KindIgnored
			continue
		}
		switch {
		case dense[n]:
			s.kinds[j] = KindDense
		case cat[n]:
			s.kinds[j] = KindCategorical
		case o.Format == FormatCriteo && isCriteoDense(n):
			s.kinds[j] = KindDense
		case o.Format == FormatCSV:
			s.pending = append(s.pending, j)
		}
	}
	return s, nil
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

// kindDetector decides the kind of a schema's pending fields from data
// rows: a field is dense when it holds at least one value that is not
// missing ([IsMissing]) and every such value is a finite number.
type kindDetector struct {
	sc            *schema
	seen, nonNum  []bool
	firstNonNum   []string // the first non-numeric value of each field
	firstNonLine  []int64
	rows, skipped int64
}

func newKindDetector(sc *schema) *kindDetector {
	n := len(sc.pending)
	return &kindDetector{sc: sc, seen: make([]bool, n), nonNum: make([]bool, n), firstNonNum: make([]string, n), firstNonLine: make([]int64, n)}
}

// add looks at one row's fields (read from line n); a row with the wrong
// number of fields is not looked at.
func (d *kindDetector) add(f [][]byte, n int64) {
	if len(f) != len(d.sc.names) {
		d.skipped++
		return
	}
	d.rows++
	for i, j := range d.sc.pending {
		if d.nonNum[i] || IsMissing(f[j]) {
			continue
		}
		d.seen[i] = true
		if _, ok := parseNumber(bytes.TrimSpace(f[j])); !ok {
			d.nonNum[i] = true
			d.firstNonNum[i] = string(f[j])
			d.firstNonLine[i] = n
		}
	}
}

// apply sets the kinds of the pending fields.
func (d *kindDetector) apply() {
	for i, j := range d.sc.pending {
		if d.seen[i] && !d.nonNum[i] {
			d.sc.kinds[j] = KindDense
		} else {
			d.sc.kinds[j] = KindCategorical
		}
	}
	d.sc.pending = nil
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
	return fmt.Errorf("the header names columns that are not Criteo's (label, I1..I13, C1..C26): %s; "+
		"a table of your own is format csv (key format), with its label column (key label)", listNames(other))
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
	hint := ""
	if delim == '\t' && (len(first) == 1+criteoDense+criteoCat || len(first) == criteoDense+criteoCat) {
		hint = "; its " + fmt.Sprint(len(first)) + " tab-separated fields look like Criteo's train.txt (key format criteo)"
	}
	return fmt.Errorf("the first line holds no column names (every field is a number or empty): format csv needs a header line naming the columns%s", hint)
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

// listNames renders column names for a message, the first 12 of them.
func listNames(names []string) string {
	const most = 12
	q := make([]string, 0, min(len(names), most))
	for i, n := range names {
		if i == most {
			break
		}
		q = append(q, strconv.Quote(n))
	}
	s := strings.Join(q, ", ")
	if len(names) > most {
		s += fmt.Sprintf(" and %d more", len(names)-most)
	}
	return s
}
