package data

import (
	"reflect"
	"testing"
)

// TestGenerateDirectMatchesText: generating rows straight into the
// loader's chunks loads exactly what loading their text did (the whole
// Split: rows, IDs, labels, features, encoding, Info), across options
// that change the sampling, the split, the encoding and the columns'
// kinds, chunk sizes, and the shared-factor and tied-label generators;
// options the direct source does not produce fall back to the text.
func TestGenerateDirectMatchesText(t *testing.T) {
	rows := 3000
	for _, tc := range []struct {
		name          string
		rows          int
		shared, label float64
		o             Options
		direct        bool
	}{
		{name: "default", direct: true},
		{name: "one row", rows: 1, direct: true},
		{name: "five rows", rows: 5, o: Options{TestFrac: 0.4}, direct: true},
		{name: "sample and test share", o: Options{Sample: 0.5, TestFrac: 0.3, Seed: 9}, direct: true},
		{name: "hash buckets", o: Options{HashBuckets: 1000}, direct: true},
		{name: "min count and log", o: Options{MinCount: 3, LogDense: true}, direct: true},
		{name: "small chunks", o: Options{chunkRows: 7}, direct: true},
		{name: "an integer column categorical", o: Options{Categorical: []string{"I2", "I5"}}, direct: true},
		{name: "columns ignored", o: Options{Ignore: []string{"I1", "C3", "C20"}}, direct: true},
		{name: "shared factor", shared: 0.5, direct: true},
		{name: "tied label", shared: 0.5, label: 0.3, direct: true},
		{name: "a categorical column numeric", o: Options{Dense: []string{"C9"}}},
		{name: "positive value named", o: Options{Positive: []string{"1"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := rows
			if tc.rows > 0 {
				n = tc.rows
			}
			text := tc.o
			text.synthText = true
			want, werr := GenerateTied(n, 0.25, tc.shared, tc.label, 4, text)
			got, gerr := GenerateTied(n, 0.25, tc.shared, tc.label, 4, tc.o)
			if (werr == nil) != (gerr == nil) || werr != nil && werr.Error() != gerr.Error() {
				t.Fatalf("errors: text %v, direct %v", werr, gerr)
			}
			if werr != nil {
				return
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("the direct rows' split differs from the text's:\ndirect %+v\ntext   %+v", got.Info, want.Info)
			}
			if d := usesDirect(t, n, tc.shared, tc.label, tc.o); d != tc.direct {
				t.Errorf("direct source used: %v, want %v", d, tc.direct)
			}
		})
	}
}

// usesDirect says whether Generate with o takes the direct source.
func usesDirect(t *testing.T, rows int, shared, label float64, o Options) bool {
	t.Helper()
	g, err := newSynthTied(0.25, shared, label, 4)
	if err != nil {
		t.Fatal(err)
	}
	var r synthRow
	g.next(&r)
	_, ok, _ := loadDirect(g, g.appendRow(nil, &r), "t", o, int64(rows))
	return ok
}

// TestLineBytes: the direct source counts each row's bytes as the text
// has them (Info.Bytes), and decimalDigits by hand.
func TestLineBytes(t *testing.T) {
	for v, want := range map[uint64]int{0: 1, 9: 1, 10: 2, 99: 2, 100: 3, 999999999: 9, 1000000000: 10} {
		if got := decimalDigits(v); got != want {
			t.Errorf("decimalDigits(%d) = %d, want %d", v, got, want)
		}
	}
	g, err := newSynth(0.25, 2)
	if err != nil {
		t.Fatal(err)
	}
	d := &directRows{g: g}
	var r synthRow
	for range 2000 {
		g.next(&r)
		if got, want := d.lineBytes(&r), int64(len(g.appendRow(nil, &r))); got != want {
			t.Fatalf("lineBytes %d, the line's %d", got, want)
		}
	}
}
