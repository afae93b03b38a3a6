package data

import (
	"bytes"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// LabelCount is how many data rows hold one label value.
type LabelCount struct {
	Value string
	Count int64
}

// maxLabelValues bounds the distinct label values counted one by one; the
// rest are counted together.
const maxLabelValues = 20

// labelTally counts the values of a label column over every data row. A
// label column holds few values, so they are found by a linear scan (two
// comparisons for 0/1 labels), cheaper than hashing every row's value.
type labelTally struct {
	values []string
	counts []int64
	other  int64 // rows whose value is beyond the first maxLabelValues
}

// add counts value b (spaces trimmed).
func (t *labelTally) add(b []byte) {
	b = bytes.TrimSpace(b)
	for i, v := range t.values {
		if string(b) == v {
			t.counts[i]++
			return
		}
	}
	if len(t.values) >= maxLabelValues {
		t.other++
		return
	}
	t.values = append(t.values, string(b))
	t.counts = append(t.counts, 1)
}

// sorted returns the counted values, most frequent first (ties by value).
func (t *labelTally) sorted() []LabelCount {
	out := make([]LabelCount, len(t.values))
	for i, v := range t.values {
		out[i] = LabelCount{v, t.counts[i]}
	}
	slices.SortFunc(out, func(a, b LabelCount) int {
		if a.Count != b.Count {
			if a.Count > b.Count {
				return -1
			}
			return 1
		}
		return strings.Compare(a.Value, b.Value)
	})
	return out
}

// DescribeLabels renders label counts as `"no" ×900, "yes" ×100`.
func DescribeLabels(counts []LabelCount, other int64) string {
	parts := make([]string, 0, len(counts)+1)
	for _, c := range counts {
		parts = append(parts, strconv.Quote(c.Value)+" ×"+strconv.FormatInt(c.Count, 10))
	}
	if other > 0 {
		parts = append(parts, fmt.Sprintf("%d more rows with other values", other))
	}
	return strings.Join(parts, ", ")
}

// labelAdvice is the sentence appended to a label error: what the column
// holds and how to choose the classes.
func (t *labelTally) advice(col string, o Options) string {
	s := fmt.Sprintf("; the label column %q holds %s", col, DescribeLabels(t.sorted(), t.other))
	if len(o.Positive) == 0 {
		return s + "; name the positive values (key positive) and, if the column holds more than two values, the negative ones (key negative)"
	}
	return s + "; name the negative values (key negative), or skip the other rows (key skip_bad_rows)"
}

// adviceKeys are the configuration keys advice names, for the error that
// carries it (configkey).
func adviceKeys(o Options) []string {
	if len(o.Positive) == 0 {
		return []string{"positive", "negative"}
	}
	return []string{"negative", "skip_bad_rows"}
}

// inList reports whether b is one of vs.
func inList(b []byte, vs []string) bool {
	for _, v := range vs {
		if string(b) == v {
			return true
		}
	}
	return false
}

// labelOf maps a label value to 0 or 1 by the rules of Options.Positive.
// With positive values and no negative ones, every other non-empty value
// is negative; the caller checks that there is only one such value.
func labelOf(b []byte, o *Options) (uint8, bool) {
	b = bytes.TrimSpace(b)
	if len(o.Positive) == 0 {
		v, ok := parseNumber(b)
		switch {
		case ok && v == 0:
			return 0, true
		case ok && v == 1:
			return 1, true
		}
		return 0, false
	}
	switch {
	case inList(b, o.Positive):
		return 1, true
	case len(o.Negative) > 0:
		return 0, inList(b, o.Negative)
	default:
		return 0, len(b) > 0
	}
}

// missingTokens are the spellings of a missing value in a numeric column,
// compared without regard to case (the empty value is missing too).
var missingTokens = []string{"na", "n/a", "nan", "null", "none", "?", "inf", "+inf", "-inf", "infinity", "+infinity", "-infinity"}

// IsMissing reports whether a cell of a numeric column is missing: empty
// (after trimming spaces), or one of NA, N/A, NaN, null, None, ?, and the
// infinities (inf, ±inf, ±infinity), in any case. A missing cell never
// decides a column's kind; how it is encoded is described at [Load].
func IsMissing(b []byte) bool {
	if len(b) == 0 {
		return true
	}
	if c := b[0]; c >= '0' && c <= '9' || c == '.' {
		return false // a number (the common case), never a token
	}
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return true
	}
	if len(b) > len("-infinity") {
		return false
	}
	if c := b[0]; (c == '-' || c == '+') && len(b) > 1 && b[1] >= '0' && b[1] <= '9' {
		return false
	}
	for _, t := range missingTokens {
		if bytes.EqualFold(b, []byte(t)) {
			return true
		}
	}
	return false
}
