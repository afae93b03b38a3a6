package data

import (
	"strconv"
	"strings"
	"testing"
)

func TestClassifyID(t *testing.T) {
	cases := []struct {
		id   string
		want IDKind
	}{
		{"1000", IDInteger}, {"0", IDInteger}, {"18446744073709551615", IDInteger},
		{"007", IDZeroPadded}, {"00", IDZeroPadded},
		{"1000.0", IDDecimal}, {"-5", IDDecimal}, {"+5", IDDecimal}, {".5", IDDecimal}, {"5.", IDDecimal},
		{"1e3", IDDecimal}, {"1.5E-2", IDDecimal}, {"-0.0", IDDecimal},
		{"", IDText}, {"u17", IDText}, {"1,000", IDText}, {" 12", IDText}, {"12 ", IDText},
		{".", IDText}, {"-", IDText}, {"1e", IDText}, {"e5", IDText}, {"1e+", IDText}, {"0x1F", IDText},
		{"NaN", IDText}, {"inf", IDText}, {"1.2.3", IDText},
	}
	for _, c := range cases {
		if got := ClassifyID([]byte(c.id)); got != c.want {
			t.Errorf("ClassifyID(%q) = %s, want %s", c.id, got, c.want)
		}
	}
	b := []byte("1000.0")
	if n := testing.AllocsPerRun(100, func() { ClassifyID(b) }); n != 0 {
		t.Errorf("ClassifyID allocates %v times", n)
	}
}

func TestIDFormatString(t *testing.T) {
	cases := []struct {
		ids  []string
		want string
	}{
		{nil, "row numbers"},
		{[]string{"1", "2", "3"}, "integer"},
		{[]string{"1000.0", "2.5"}, "decimal"},
		{[]string{"007", "010"}, "zero-padded integer"},
		{[]string{"a", "1", "b", "2", "c", "3.0"}, "text ×3, integer ×2, decimal ×1"},
		{[]string{"1", "07"}, "integer ×1, zero-padded integer ×1"},
	}
	for _, c := range cases {
		if got := IDFormatOf(c.ids).String(); got != c.want {
			t.Errorf("IDFormatOf(%q) = %q, want %q", c.ids, got, c.want)
		}
	}
}

// TestLoadReportsIDFormat: the loaders count how every good row's ID is
// written (sampled or not; bad rows skipped are not counted), and a table
// without an ID column reports row numbers.
func TestLoadReportsIDFormat(t *testing.T) {
	o := Options{Format: FormatCSV, LabelCol: "y", IDCol: "id", TestFrac: 0.5, Sample: 0.5, Seed: 9, SkipBadRows: true}
	var sb strings.Builder
	sb.WriteString("id,c,y\n")
	for i := range 200 {
		switch {
		case i%50 == 0:
			sb.WriteString("u" + itoa(i) + ",a,1\n") // text
		case i%40 == 1:
			sb.WriteString(itoa(i) + ".0,b,0\n") // decimal
		case i%40 == 2:
			sb.WriteString(itoa(i) + ",b\n") // bad row: not counted
		default:
			sb.WriteString(itoa(i) + "," + []string{"a", "b"}[i%2] + "," + itoa(i%2) + "\n")
		}
	}
	s, err := LoadReader(strings.NewReader(sb.String()), "ids.csv", o)
	if err != nil {
		t.Fatal(err)
	}
	// 200 rows: 4 text (0, 50, 100, 150), 5 decimal (1, 41, …, 161),
	// 5 bad (2, 42, …, 162), 186 integers.
	want := IDFormat{Counts: [numIDKinds]int64{IDInteger: 186, IDDecimal: 5, IDText: 4}}
	if s.Info.IDFormat != want {
		t.Errorf("IDFormat %+v (%s), want %+v", s.Info.IDFormat, s.Info.IDFormat, want)
	}
	if k, ok := s.Info.IDFormat.Main(); !ok || k != IDInteger {
		t.Errorf("main kind %s, %v", k, ok)
	}
	s, err = LoadReader(strings.NewReader("c,y\na,1\nb,0\n"), "rows.csv", Options{Format: FormatCSV, LabelCol: "y", TestFrac: -1})
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Info.IDFormat.String(); got != "row numbers" {
		t.Errorf("without IDs: %q", got)
	}
}

func itoa(i int) string { return strconv.Itoa(i) }
