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
				return nil, fmt.Errorf("first row has %d fields, want %d (label, I1..I13, C1..C26) or %d (no label), or a header",
					len(first), 1+criteoDense+criteoCat, criteoDense+criteoCat)
			}
		} else {
			s.header = true
		}
	default:
		s.header = true
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
		case !o.NoLabel:
			return nil, fmt.Errorf("label column %q not found among %d columns (set NoLabel for a party without labels)", labelCol, len(s.names))
		}
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
	for j, n := range s.names {
		if s.kinds[j] == KindLabel || s.kinds[j] == KindID || (s.kinds[j] == KindIgnored && n == labelCol) {
			continue
		}
		if o.Columns != nil && !keep[n] {
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

// detectKinds decides the kind of every pending field from sample rows: a
// field is dense when it has at least one non-empty value and every
// non-empty value is a finite number.
func (s *schema) detectKinds(rows [][][]byte) {
	for _, j := range s.pending {
		seen, numeric := false, true
		for _, r := range rows {
			if j >= len(r) || len(r[j]) == 0 {
				continue
			}
			seen = true
			if _, ok := parseNumber(r[j]); !ok {
				numeric = false
				break
			}
		}
		if seen && numeric {
			s.kinds[j] = KindDense
		} else {
			s.kinds[j] = KindCategorical
		}
	}
	s.pending = nil
}
