package data

import (
	"bytes"
	"compress/gzip"
	"io"
	"strings"
	"testing"
)

// TestDuplicateIDsRefused: a table whose rows repeat an example ID is
// refused by every loader, naming the ID and the two lines, whatever the
// reader (a file, a seeker, a stream, a gzipped file), including IDs that
// differ as text but read as one number; a table without an ID column
// (row numbers are IDs) and one with unique IDs load.
func TestDuplicateIDsRefused(t *testing.T) {
	const hdr = "id,c,y\n"
	o := Options{Format: FormatCSV, LabelCol: "y", IDCol: "id", TestFrac: -1}
	cases := []struct {
		name, body, want string
	}{
		{"same ID", hdr + "1,a,1\n2,b,0\n3,c,1\n2,d,1\n", `line 5: ID "2" in column "id" already appears on line 3`},
		{"same number", hdr + "7,a,1\n8,b,0\n007,c,1\n", `line 4: ID "007" in column "id" is the example ID of "7" on line 2 (both read as 7)`},
		{"text IDs", hdr + "u1,a,1\nu2,b,0\n\nu1,c,0\n", `line 5: ID "u1" in column "id" already appears on line 2`},
		{"after a quoted line break", hdr + "1,\"a\nb\",1\n2,b,0\n1,c,0\n", `line 5: ID "1" in column "id" already appears on line 2`},
		{"unique", hdr + "1,a,1\n2,b,0\n3,c,1\n4,d,0\n", ""},
	}
	check := func(how, name, want string, err error) {
		t.Helper()
		switch {
		case want == "" && err != nil:
			t.Errorf("%s, %s: %v", how, name, err)
		case want != "" && (err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "unique")):
			t.Errorf("%s, %s: got %v, want %q", how, name, err, want)
		}
	}
	for _, c := range cases {
		path := writeFile(t, "t.csv", c.body)
		_, err := Load(path, o)
		check("Load", c.name, c.want, err)
		_, err = LoadReader(strings.NewReader(c.body), "t.csv", o)
		check("LoadReader", c.name, c.want, err)
		_, err = LoadReader(struct{ io.Reader }{strings.NewReader(c.body)}, "t.csv", o)
		check("LoadReader (stream)", c.name, c.want, err)
		_, err = Load(gzipFile(t, c.body), o)
		check("Load (gzip)", c.name, c.want, err)
		withY := o
		withY.Categorical = []string{"c"}
		good, err := LoadReader(strings.NewReader(hdr+"1,a,1\n2,b,0\n3,a,0\n4,b,1\n5,a,1\n6,b,0\n"), "good.csv", withY)
		if err != nil {
			t.Fatal(err)
		}
		_, err = LoadWith(path, Options{}, good.Encoding)
		check("LoadWith", c.name, c.want, err)
	}
	// A stream read once (nothing to detect: every kind declared) still
	// names the ID.
	_, err := LoadReaderWith(struct{ io.Reader }{strings.NewReader(cases[0].body)}, "s.csv", Options{}, mustEncoding(t))
	if err == nil || !strings.Contains(err.Error(), "example ID 2 appears more than once") {
		t.Errorf("LoadReaderWith (stream): %v", err)
	}
	// Without an ID column the row numbers are the IDs: repeated rows load.
	if _, err := LoadReader(strings.NewReader(hdr+"1,a,1\n1,a,1\n1,a,0\n"), "rows.csv", Options{Format: FormatCSV, LabelCol: "y", Ignore: []string{"id"}, TestFrac: -1}); err != nil {
		t.Errorf("without an ID column: %v", err)
	}
}

func gzipFile(t *testing.T, body string) string {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	zw.Write([]byte(body))
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return writeFile(t, "t.csv.gz", b.String())
}

func mustEncoding(t *testing.T) *Encoding {
	t.Helper()
	s, err := LoadReader(strings.NewReader("id,c,y\n1,a,1\n2,b,0\n"), "e.csv", Options{Format: FormatCSV, LabelCol: "y", IDCol: "id", Categorical: []string{"c"}, TestFrac: -1})
	if err != nil {
		t.Fatal(err)
	}
	return s.Encoding
}
