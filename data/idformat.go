package data

import (
	"fmt"
	"strings"
)

// IDKind is how one example ID is written.
type IDKind uint8

// The kinds of ID text, as [ClassifyID] tells them apart.
const (
	// IDInteger: decimal digits without a leading zero ("1000", "0").
	IDInteger IDKind = iota
	// IDZeroPadded: decimal digits with a leading zero ("007").
	IDZeroPadded
	// IDDecimal: any other decimal number: a sign, a fraction or an
	// exponent ("1000.0", "-5", "1e3").
	IDDecimal
	// IDText: anything else ("u17", "", "1,000").
	IDText
	numIDKinds
)

var idKindNames = [numIDKinds]string{"integer", "zero-padded integer", "decimal", "text"}

// String names the kind: "integer", "zero-padded integer", "decimal" or
// "text".
func (k IDKind) String() string {
	if k < numIDKinds {
		return idKindNames[k]
	}
	return fmt.Sprintf("IDKind(%d)", uint8(k))
}

// ClassifyID says how the ID text b is written. It reads b once and does
// not allocate. Leading and trailing spaces make an ID text: the loaders
// take ID fields as they are.
func ClassifyID(b []byte) IDKind {
	i := 0
	if i < len(b) && (b[i] == '+' || b[i] == '-') {
		i++
	}
	intStart := i
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	digits := i - intStart
	if i == len(b) && intStart == 0 && digits > 0 {
		if digits > 1 && b[0] == '0' {
			return IDZeroPadded
		}
		return IDInteger
	}
	if i < len(b) && b[i] == '.' {
		i++
		f := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		digits += i - f
	}
	if digits == 0 {
		return IDText
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		e := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		if i == e {
			return IDText
		}
	}
	if i != len(b) {
		return IDText
	}
	return IDDecimal
}

// IDFormat describes how a table's example IDs are written: how many of
// its rows' IDs are of each [IDKind]. The zero value describes a table
// without an ID column (the row numbers are the IDs).
//
// The loaders read an ID of digits as its number (up to 20 digits within
// the uint64 range; longer ones are hashed), so "007" and "7" are one ID,
// and hash any other text ([HashID]), so "1000.0" is not ID 1000: two
// parties whose IDs are integers on one side and decimals or text on the
// other share no ID, and comparing their formats names why.
type IDFormat struct {
	// Counts[k] is the number of IDs of kind k.
	Counts [numIDKinds]int64
}

// IDFormatOf describes the ID texts ids.
func IDFormatOf(ids []string) IDFormat {
	var f IDFormat
	for _, id := range ids {
		f.Add([]byte(id))
	}
	return f
}

// Add counts the ID text b.
func (f *IDFormat) Add(b []byte) { f.Counts[ClassifyID(b)]++ }

// Merge adds g's counts to f's.
func (f *IDFormat) Merge(g IDFormat) {
	for k, n := range g.Counts {
		f.Counts[k] += n
	}
}

// Total is the number of IDs counted.
func (f IDFormat) Total() int64 {
	var n int64
	for _, c := range f.Counts {
		n += c
	}
	return n
}

// Main returns the most frequent kind (the first in IDKind order on a
// tie) and whether any ID was counted.
func (f IDFormat) Main() (IDKind, bool) {
	best := IDKind(0)
	for k := range numIDKinds {
		if f.Counts[k] > f.Counts[best] {
			best = k
		}
	}
	return best, f.Counts[best] > 0
}

// String describes the format: "row numbers" without IDs, the kind's name
// when every ID is of one kind ("integer", "decimal", …), else the kinds
// with their counts, most frequent first ("integer ×998, text ×2").
func (f IDFormat) String() string {
	if f.Total() == 0 {
		return "row numbers"
	}
	var parts []string
	done := [numIDKinds]bool{}
	for {
		best, n := IDKind(0), int64(0)
		for k := range numIDKinds {
			if !done[k] && f.Counts[k] > n {
				best, n = k, f.Counts[k]
			}
		}
		if n == 0 {
			break
		}
		done[best] = true
		parts = append(parts, fmt.Sprintf("%s ×%d", best, n))
	}
	if len(parts) == 1 {
		k, _ := f.Main()
		return k.String()
	}
	return strings.Join(parts, ", ")
}
