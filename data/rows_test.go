package data

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
)

// chunkTable writes a CSV table of n rows that crosses many chunk
// boundaries: IDs, categorical columns with repeats and empty values, a
// numeric column with missing and (every so often) bad values, and,
// when withBad is set, rows with too few fields and bad labels.
func chunkTable(t *testing.T, n int, withBad bool) string {
	t.Helper()
	r := rand.New(rand.NewPCG(7, 8))
	var sb strings.Builder
	sb.WriteString("id,a,b,x,y,label\n")
	for i := range n {
		a := fmt.Sprintf("a%d", r.IntN(50))
		b := fmt.Sprintf("b%d", int(r.ExpFloat64()*300))
		if r.IntN(20) == 0 {
			b = ""
		}
		x := fmt.Sprintf("%.3f", r.NormFloat64())
		if r.IntN(15) == 0 {
			x = "NA"
		}
		y := fmt.Sprint(r.IntN(1000))
		label := fmt.Sprint(r.IntN(2))
		switch {
		case withBad && i%997 == 13:
			fmt.Fprintf(&sb, "%d,%s,%s\n", 1000+i, a, b) // too few fields
			continue
		case withBad && i%1301 == 7:
			x = "twelve"
		case withBad && i%1709 == 5:
			label = "maybe"
		}
		fmt.Fprintf(&sb, "%d,%s,%s,%s,%s,%s\n", 1000+i, a, b, x, y, label)
	}
	path := filepath.Join(t.TempDir(), "t.csv")
	if err := os.WriteFile(path, []byte(sb.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestChunkSizeChangesNothing loads tables of 10,000 rows with one line
// per chunk — exactly the line-at-a-time loader — and with other chunk
// sizes and core counts, and wants the same splits, vocabularies,
// statistics and bad-row reports, and the same first error when bad rows
// are not skipped.
func TestChunkSizeChangesNothing(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	clean, bad := chunkTable(t, 10000, false), chunkTable(t, 10000, true)
	for _, tc := range []struct {
		name string
		path string
		o    Options
	}{
		{"clean", clean, Options{Format: FormatCSV, LabelCol: "label", IDCol: "id", Categorical: []string{"a", "b"}, TestFrac: 0.2, Seed: 3}},
		{"sampled, hashed", clean, Options{Format: FormatCSV, LabelCol: "label", IDCol: "id", Categorical: []string{"a", "b", "y"}, HashBuckets: 64, Sample: 0.5, TestFrac: 0.2, Seed: 3}},
		{"row numbers as IDs, bad rows skipped", bad, Options{Format: FormatCSV, LabelCol: "label", Ignore: []string{"id"}, Categorical: []string{"a", "b"}, SkipBadRows: true, Sample: 0.7, TestFrac: 0.2, Seed: 3}},
		{"bad rows skipped", bad, Options{Format: FormatCSV, LabelCol: "label", IDCol: "id", Categorical: []string{"a", "b"}, SkipBadRows: true, TestFrac: 0.2, Seed: 3}},
		{"bad rows", bad, Options{Format: FormatCSV, LabelCol: "label", IDCol: "id", Categorical: []string{"a", "b"}, TestFrac: 0.2, Seed: 3}},
	} {
		type result struct {
			s   *Split
			err string
		}
		load := func(chunk, procs int) result {
			runtime.GOMAXPROCS(procs)
			o := tc.o
			o.chunkRows = chunk
			s, err := Load(tc.path, o)
			if err != nil {
				return result{err: err.Error()}
			}
			s.Info.Path = ""
			return result{s: s}
		}
		want := load(1, 1)
		if (want.err != "") != (tc.name == "bad rows") {
			t.Fatalf("%s: line at a time: error %q", tc.name, want.err)
		}
		if tc.o.SkipBadRows && want.s.Info.BadRows < 15 {
			t.Fatalf("%s: %d bad rows skipped, want at least 15", tc.name, want.s.Info.BadRows)
		}
		for _, c := range []struct{ chunk, procs int }{{7, 2}, {4096, 1}, {4096, 2}, {4096, 4}, {10000, 3}} {
			got := load(c.chunk, c.procs)
			if got.err != want.err || !reflect.DeepEqual(got.s, want.s) {
				t.Errorf("%s: chunks of %d on %d cores differ from one line at a time (error %q, want %q)", tc.name, c.chunk, c.procs, got.err, want.err)
			}
		}
	}
}

// TestRowNumbersAreIDs: without an ID column a row's ID is its number
// among the data rows, from 0, whatever chunk it falls in.
func TestRowNumbersAreIDs(t *testing.T) {
	path := chunkTable(t, 9000, false)
	s, err := Load(path, Options{Format: FormatCSV, LabelCol: "label", Ignore: []string{"id"}, Categorical: []string{"a", "b"}, TestFrac: 0.2, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	seen := make([]bool, 9000)
	for _, ids := range [][]uint64{s.Train.IDs, s.Test.IDs} {
		for _, id := range ids {
			if id >= 9000 || seen[id] {
				t.Fatalf("ID %d out of range or repeated", id)
			}
			seen[id] = true
		}
	}
	for id, ok := range seen {
		if !ok {
			t.Fatalf("row %d has no ID", id)
		}
	}
}

// TestLabelsCountedAfterBadLabel: after a bad label (bad rows not
// skipped) the rest of the file is read to count the label column's
// values, every row with the right number of fields, whatever its ID.
func TestLabelsCountedAfterBadLabel(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.csv")
	table := "id,a,label\n1,x,0\n2,y,maybe\n,z,1\n4,w,1\n5,v\n"
	if err := os.WriteFile(path, []byte(table), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Load(path, Options{Format: FormatCSV, LabelCol: "label", IDCol: "id", Categorical: []string{"a"}})
	if err == nil {
		t.Fatal("a bad label was accepted")
	}
	// The row with an empty ID counts its label 1; the row with too few
	// fields counts nothing.
	for _, want := range []string{`line 3`, `"1" ×2`, `"0" ×1`, `"maybe" ×1`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %s", err, want)
		}
	}
	if strings.Contains(err.Error(), `"" ×`) {
		t.Errorf("error %q counts an empty label", err)
	}
}
