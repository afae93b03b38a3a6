package data

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
)

// TestTableFormatRegistry checks the built-in table formats, the error for
// an unknown one and the registry's refusals.
func TestTableFormatRegistry(t *testing.T) {
	for _, name := range []string{"avazu", "criteo", "csv"} {
		if _, ok := LookupTableFormat(name); !ok {
			t.Errorf("table format %s is not registered", name)
		}
	}
	if _, err := LoadReader(strings.NewReader("a,b\n1,2\n"), "t.csv", Options{Format: "parquet"}); err == nil ||
		!strings.Contains(err.Error(), `unknown format "parquet"`) || !strings.Contains(err.Error(), "criteo") {
		t.Errorf("unknown format: got %v, want an error naming it and the registered formats", err)
	}
	comma := func([]byte) byte { return ',' }
	for _, c := range []struct {
		name string
		f    TableFormat
		want string
	}{
		{"taken", TableFormat{Name: "csv", Delimiter: comma}, `"csv" registered twice`},
		{"upper case", TableFormat{Name: "Toy", Delimiter: comma}, "lower-case name"},
		{"no delimiter", TableFormat{Name: "toy_nodelim"}, "a Delimiter"},
	} {
		func() {
			defer func() {
				if msg, _ := recover().(string); !strings.Contains(msg, c.want) {
					t.Errorf("%s: RegisterTableFormat panicked with %q, want %q", c.name, msg, c.want)
				}
			}()
			RegisterTableFormat(c.f)
		}()
	}
	if _, ok := LookupTableFormat("toy_nodelim"); ok {
		t.Error("a refused format entered the registry")
	}
}

// toyTableRuns makes each run of TestToyTableFormat (go test -count=N)
// register a new name.
var toyTableRuns atomic.Int64

// TestToyTableFormat registers a table format from this test file alone —
// the whole of what adding one takes: pipe-separated rows without a
// header, the columns key|y|a|c (ID, label, a number, a category written in
// digits) — and
// reads a file in it, its first line data, not a header. A headerless
// file read as csv is refused with a pointer to the toy format, which
// sniffs it.
func TestToyTableFormat(t *testing.T) {
	name := fmt.Sprintf("toy_pipe%d", toyTableRuns.Add(1))
	RegisterTableFormat(TableFormat{Name: name,
		Delimiter: func([]byte) byte { return '|' },
		Layout: func(first [][]byte, _ byte, _ Options) ([]string, bool, error) {
			if len(first) != 4 {
				return nil, false, fmt.Errorf("%d fields, want 4 (key|y|a|c)", len(first))
			}
			return []string{"key", "y", "a", "c"}, false, nil
		},
		LabelCol: "y", IDCol: "key", UintIDs: true,
		Dense: func(n string) bool { return n == "a" },
		Looks: func(first [][]byte, _ byte) string {
			if len(first) == 4 {
				return "its 4 fields look like key|y|a|c"
			}
			return ""
		},
	})
	type row struct {
		id    uint64
		label uint8
		a     float64
		c     string
	}
	var rows []row
	for i := range 40 {
		rows = append(rows, row{uint64(7 + i), uint8(i % 2), 1.5 * float64(i), fmt.Sprint(5 + i%3)})
	}
	var file strings.Builder
	for _, r := range rows {
		fmt.Fprintf(&file, "%d|%d|%g|%s\n", r.id, r.label, r.a, r.c)
	}
	sp, err := LoadReader(strings.NewReader(file.String()), "toy.txt", Options{Format: name, TestFrac: 0.3})
	if err != nil {
		t.Fatal(err)
	}
	if got := len(sp.Train.IDs) + len(sp.Test.IDs); got != len(rows) {
		t.Fatalf("%d rows read, want %d (the first line is data)", got, len(rows))
	}
	for _, ds := range []*Dataset{sp.Train, sp.Test} {
		if !slices.Equal(ds.X.DenseNames, []string{"a"}) || !slices.Equal(ds.X.CatNames, []string{"c"}) {
			t.Fatalf("columns: dense %v, categorical %v; want [a] and [c]", ds.X.DenseNames, ds.X.CatNames)
		}
		for i, id := range ds.IDs {
			r := rows[id-7]
			if r.id != id || ds.Labels[i] != r.label {
				t.Errorf("row ID %d: label %d, want %d", id, ds.Labels[i], r.label)
			}
		}
	}
	// a is numeric: min-max scaled over the training rows
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, id := range sp.Train.IDs {
		lo, hi = math.Min(lo, rows[id-7].a), math.Max(hi, rows[id-7].a)
	}
	for i, id := range sp.Train.IDs {
		if want := (rows[id-7].a - lo) / (hi - lo); math.Abs(float64(sp.Train.X.Dense[i])-want) > 1e-6 {
			t.Errorf("row ID %d: a scaled to %g, want (%g−%g)/(%g−%g) = %g", id, sp.Train.X.Dense[i], rows[id-7].a, lo, hi, lo, want)
		}
	}
	_, err = LoadReader(strings.NewReader(strings.ReplaceAll(file.String(), "|", ",")), "toy.csv", Options{Format: FormatCSV, LabelCol: "y"})
	if err == nil || !strings.Contains(err.Error(), "its 4 fields look like key|y|a|c (key format "+name+")") {
		t.Errorf("a headerless toy file read as csv: got %v, want the toy format's hint", err)
	}
}
