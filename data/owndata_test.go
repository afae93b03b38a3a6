package data

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
)

func TestIsMissing(t *testing.T) {
	for _, c := range []struct {
		in   string
		want bool
	}{
		{"", true}, {"  ", true}, {"NA", true}, {"na", true}, {"N/A", true}, {"NaN", true}, {"nan", true},
		{"NULL", true}, {"None", true}, {"?", true}, {"inf", true}, {"-Inf", true}, {"+infinity", true},
		{"0", false}, {"1.5", false}, {"-", false}, {"nano", false}, {"information", false}, {"x", false},
	} {
		if got := IsMissing([]byte(c.in)); got != c.want {
			t.Errorf("IsMissing(%q) = %v, want %v", c.in, got, c.want)
		}
	}
}

// TestColumnKindsFromTheWholeFile checks that an odd cell among the first
// rows does not make a numeric column categorical, that a word far past
// the first rows makes a column categorical rather than its row bad, and
// that declared kinds and ignored columns win.
func TestColumnKindsFromTheWholeFile(t *testing.T) {
	var b strings.Builder
	b.WriteString("id,y,age,code,noise\n")
	const n = 1500
	for i := range n {
		age := fmt.Sprint(20 + i%50)
		switch i {
		case 0:
			age = "NaN"
		case 1:
			age = "inf"
		case 2:
			age = ""
		case 3:
			age = "?"
		}
		code := fmt.Sprint(i % 7)
		if i == n-1 {
			code = "X7" // far past any first-rows sniff
		}
		fmt.Fprintf(&b, "%d,%d,%s,%s,%d\n", i, i%2, age, code, i*i)
	}
	p := writeFile(t, "k.csv", b.String())
	o := Options{Format: FormatCSV, LabelCol: "y", IDCol: "id", TestFrac: -1}
	s, err := Load(p, o)
	if err != nil {
		t.Fatal(err)
	}
	x := s.Train.X
	if !slices.Equal(x.DenseNames, []string{"age", "noise"}) || !slices.Equal(x.CatNames, []string{"code"}) {
		t.Fatalf("dense %v categorical %v, want age, noise; code", x.DenseNames, x.CatNames)
	}
	// age: values 20…69, mean over rows 4…1499 of 20 + i%50; the four
	// missing rows take it. Computed independently here.
	sum, cnt := 0.0, 0
	for i := 4; i < n; i++ {
		sum += float64(20 + i%50)
		cnt++
	}
	mean := sum / float64(cnt)
	want := float32((mean - 20) / 49)
	for r := range 4 {
		if got := x.Dense[r*2]; math.Abs(float64(got-want)) > 1e-6 {
			t.Errorf("row %d: missing age encoded %v, want %v (the mean %v scaled)", r, got, want, mean)
		}
	}
	if got := x.Dense[4*2]; got != float32((24.0-20)/49) {
		t.Errorf("row 4: age %v", got)
	}
	for _, c := range s.Info.Columns {
		if c.Name == "age" && (c.NA != 4 || c.Min != 20 || c.Max != 69 || math.Abs(c.Missing-mean) > 1e-9) {
			t.Errorf("age info %+v, want 4 missing, range [20, 69], missing ↦ %v", c, mean)
		}
	}
	// The old first-rows sniff, still available, reads X7 as a bad row.
	o2 := o
	o2.DetectRows = 1000
	if _, err := Load(p, o2); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("line %d", n+1)) {
		t.Errorf("first-rows sniff: error %v, want one naming line %d", err, n+1)
	}
	// Declared kinds and ignored columns.
	o.Dense, o.Categorical, o.Ignore = []string{"code"}, []string{"age"}, []string{"noise"}
	if _, err := Load(p, o); err == nil || !strings.Contains(err.Error(), `numeric column "code": "X7" is not a number`) {
		t.Errorf("declared numeric code: error %v", err)
	}
	o.Dense = nil
	s, err = Load(p, o)
	if err != nil {
		t.Fatal(err)
	}
	if x := s.Train.X; len(x.DenseNames) != 0 || !slices.Equal(x.CatNames, []string{"age", "code"}) {
		t.Errorf("declared: dense %v categorical %v", x.DenseNames, x.CatNames)
	}
	// The reader form detects over the whole table too (read twice).
	s, err = LoadReader(bytes.NewReader([]byte(b.String())), "r", Options{Format: FormatCSV, LabelCol: "y", IDCol: "id", TestFrac: -1})
	if err != nil || !slices.Equal(s.Train.X.CatNames, []string{"code"}) {
		t.Errorf("LoadReader: %v", err)
	}
	// Inspect resolves the kinds as Load does.
	r, err := Inspect(p, Options{Format: FormatCSV, LabelCol: "y", IDCol: "id"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]ColumnKind{}
	for _, c := range r.Columns {
		kinds[c.Name] = c.Kind
	}
	if kinds["age"] != KindDense || kinds["code"] != KindCategorical || r.Columns[2].NA != 4 {
		t.Errorf("inspect kinds %v, age NA %d", kinds, r.Columns[2].NA)
	}
	for _, o := range []Options{{Dense: []string{"a"}, Ignore: []string{"a"}}, {Categorical: []string{"a"}, Ignore: []string{"a"}}} {
		if _, err := o.withDefaults(); err == nil || !strings.Contains(err.Error(), `column "a" declared both`) {
			t.Errorf("%+v: error %v", o, err)
		}
	}
}

// TestWrongFormatIsNamed checks that a file not in the declared format is
// refused with a message naming the format that fits.
func TestWrongFormatIsNamed(t *testing.T) {
	ownCSV := "age,income,city,y\n30,100,a,1\n40,200,b,0\n"
	// A Criteo table with an ID column named as such is Criteo's.
	if _, err := Load(writeFile(t, "c.csv", "uid,label,I1,C1\n7,1,3,a\n8,0,,b\n"), Options{IDCol: "uid", TestFrac: -1}); err != nil {
		t.Errorf("criteo with an ID column: %v", err)
	}
	for _, c := range []struct {
		name, body string
		o          Options
		want       string
	}{
		{"own csv read as criteo", ownCSV, Options{}, `line 1: the header names columns that are not Criteo's (label, I1..I13, C1..C26): "age", "income", "city", "y"; a table of your own is format csv (key format)`},
		{"own csv read as criteo, label named", ownCSV, Options{LabelCol: "y"}, `not Criteo's (label, I1..I13, C1..C26): "age", "income", "city"; a table of your own is format csv (key format)`},
		{"own csv without header read as criteo", "30,100,a,1\n", Options{}, "first row has 4 fields, want 40 (label, I1..I13, C1..C26) or 39 (no label), or a header: this is not a Criteo file; a table of your own is format csv (key format)"},
		{"own csv read as avazu", ownCSV, Options{Format: FormatAvazu}, `no label column "click", the avazu format's, in the header, which names "age", "income", "city", "y": name the label column (key label), or if this is a table of your own, read it as format csv (key format)`},
		{"csv without header", "30,100,a,1\n", Options{Format: FormatCSV, LabelCol: "y"}, ""},
		{"csv of numbers without header", "30,100,5,1\n", Options{Format: FormatCSV, LabelCol: "y"}, "the first line holds no column names (every field is a number or empty): format csv needs a header line"},
		{"criteo train.txt read as csv", "0\t1" + strings.Repeat("\t", 38) + "\n", Options{Format: FormatCSV, LabelCol: "y"}, "look like Criteo's train.txt (key format criteo)"},
		{"semicolons", "a;b;y\n1;2;0\n", Options{Format: FormatCSV, LabelCol: "y"}, `the header line holds a single column "a;b;y": a table's fields are separated by commas or tabs`},
	} {
		_, err := Load(writeFile(t, "f.csv", c.body), c.o)
		if c.want == "" {
			// A header of names that are not all numbers is a header:
			// "a" is a name, so this reads as columns 30, 100, a, 1 and
			// the label y is missing.
			if err == nil || !strings.Contains(err.Error(), `label column "y" (key label) is not in the header`) {
				t.Errorf("%s: error %v", c.name, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
		}
		if err != nil && strings.Contains(err.Error(), "NoLabel") {
			t.Errorf("%s: the error names a Go field: %v", c.name, err)
		}
	}
}

// TestLabelValuesAreListed checks that a label column of words, read
// without positive values, is refused with the counts of every value in
// the file, past the line of the first bad value.
func TestLabelValuesAreListed(t *testing.T) {
	body := "x,y\n1,no\n2,yes\n3,no\n4,no\n5,yes\n6,maybe\n"
	p := writeFile(t, "l.csv", body)
	_, err := Load(p, Options{Format: FormatCSV, LabelCol: "y"})
	want := `line 2: label "no" in column "y" is not 0 or 1; the label column "y" holds "no" ×3, "yes" ×2, "maybe" ×1; name the positive values (key positive)`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("error %v, want %q", err, want)
	}
	// Lists: two negative values.
	s, err := Load(p, Options{Format: FormatCSV, LabelCol: "y", Positive: []string{"yes"}, Negative: []string{"no", "maybe"}, TestFrac: -1})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(s.Train.Labels, []uint8{0, 1, 0, 0, 1, 0}) {
		t.Errorf("labels %v", s.Train.Labels)
	}
	if _, err := (Options{Positive: []string{"a"}, Negative: []string{" a "}}).withDefaults(); err == nil {
		t.Error("a value both positive and negative is accepted")
	}
	// Inspect lists the values too.
	r, err := Inspect(p, Options{Format: FormatCSV, LabelCol: "y"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := DescribeLabels(r.Labels, r.OtherLabels); got != `"no" ×3, "yes" ×2, "maybe" ×1` {
		t.Errorf("inspect labels %s", got)
	}
}

// TestEncodingKeepsLabelListsAndMissing round-trips the label lists and a
// dense column's missing-value substitute, and reads the single-string
// label of an older file.
func TestEncodingKeepsLabelListsAndMissing(t *testing.T) {
	e := &Encoding{Format: FormatCSV, LabelCol: "y", Positive: []string{"a", "b"}, Negative: []string{"c"},
		Columns: []ColumnEncoding{{Name: "v", Kind: KindDense, Min: 1, Max: 3, Missing: 2.5}}}
	var buf bytes.Buffer
	if _, err := e.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	got, err := ReadEncoding(bytes.NewReader(buf.Bytes()), "e")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.Positive, e.Positive) || !slices.Equal(got.Negative, e.Negative) || got.Columns[0].Missing != 2.5 {
		t.Errorf("read back %+v", got)
	}
	var old labelValues
	if err := old.UnmarshalJSON([]byte(`"yes"`)); err != nil || !slices.Equal(old, labelValues{"yes"}) {
		t.Errorf("single string: %v %v", old, err)
	}
}
