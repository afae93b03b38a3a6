package data

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/splitguard/splitguard/configkey"
)

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

// resolveSchema lays out a table from its first line's fields: the
// format's layout of the columns, then the label, the ID and the kind of
// every feature column. The schema's header says whether the first line
// is a header (and so not data).
func resolveSchema(o Options, delim byte, first [][]byte) (*schema, error) {
	tf, err := tableFormat(o.Format)
	if err != nil {
		return nil, err
	}
	s := &schema{format: o.Format, delim: delim, label: -1, id: -1}
	index, err := s.layout(tf, o, first)
	if err != nil {
		return nil, err
	}
	labelCol, err := s.resolveLabel(tf, o, index)
	if err != nil {
		return nil, err
	}
	if err := s.resolveID(tf, o, index); err != nil {
		return nil, err
	}
	if err := s.resolveFeatures(tf, o, index, labelCol); err != nil {
		return nil, err
	}
	return s, nil
}

// layout sets the column names, from the format's layout of a data line or
// from the header, and every column's kind to categorical; it returns the
// index of each name.
func (s *schema) layout(tf TableFormat, o Options, first [][]byte) (map[string]int, error) {
	s.header = true
	if tf.Layout != nil {
		names, header, err := tf.Layout(first, s.delim, o)
		if err != nil {
			return nil, err
		}
		s.names, s.header = names, header
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
	return index, nil
}

// resolveLabel finds the label column (the options', else the format's)
// and returns its name, "" when there is none.
func (s *schema) resolveLabel(tf TableFormat, o Options, index map[string]int) (string, error) {
	labelCol, explicit := o.LabelCol, o.LabelCol != ""
	if !explicit {
		labelCol = tf.LabelCol
	}
	if labelCol == "" {
		if !o.NoLabel {
			return "", configkey.Keyed(fmt.Errorf("no label column named (key label): the header names %s", listNames(s.names)), "label")
		}
		return "", nil
	}
	j, ok := index[labelCol]
	switch {
	case ok && o.NoLabel:
		s.kinds[j] = KindIgnored
	case ok:
		s.kinds[j] = KindLabel
		s.label = j
	case !o.NoLabel && explicit:
		return "", configkey.Keyed(fmt.Errorf("label column %q (key label) is not in the header, which names %s", labelCol, listNames(s.names)), "label")
	case !o.NoLabel:
		return "", configkey.Keyed(fmt.Errorf("no label column %q, the %s format's, in the header, which names %s: name the label column (key label), or if this is a table of your own, read it as format csv (key format)",
			labelCol, o.Format, listNames(s.names)), "label", "format")
	}
	return labelCol, nil
}

// resolveID finds the ID column (the options', else the format's, which
// must then be there); without one, rows are numbered.
func (s *schema) resolveID(tf TableFormat, o Options, index map[string]int) error {
	idCol := o.IDCol
	if idCol == "" {
		idCol = tf.IDCol
	}
	if idCol == "" {
		return nil
	}
	j, ok := index[idCol]
	if !ok {
		if o.IDCol != "" || tf.IDCol != "" {
			return fmt.Errorf("ID column %q not found", idCol)
		}
		return nil
	}
	if s.kinds[j] == KindLabel {
		return fmt.Errorf("column %q is both the label and the ID", idCol)
	}
	s.kinds[j] = KindID
	s.id = j
	s.idMode = idOrHash
	if tf.UintIDs {
		s.idMode = idUint
	}
	return nil
}

// resolveFeatures sets the kind of every other column: ignored when the
// options leave it out, dense or categorical as they declare it, else as
// the format says (its Dense columns, or pending detection from the data).
func (s *schema) resolveFeatures(tf TableFormat, o Options, index map[string]int, labelCol string) error {
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
		return err
	}
	dense, err := check("dense", o.Dense)
	if err != nil {
		return err
	}
	cat, err := check("categorical", o.Categorical)
	if err != nil {
		return err
	}
	ignore, err := check("ignored", o.Ignore)
	if err != nil {
		return err
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
		case tf.Dense != nil && tf.Dense(n):
			s.kinds[j] = KindDense
		case tf.Dense == nil && tf.DetectKinds:
			s.pending = append(s.pending, j)
		}
	}
	return nil
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
