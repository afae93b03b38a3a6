package data

import (
	"bytes"
	"strings"
	"testing"
)

// FuzzReadTable feeds arbitrary text to the table readers (Criteo, Avazu,
// CSV): they must return a split or an error, never panic, and a split
// must be consistent (one ID and label per row).
func FuzzReadTable(f *testing.F) {
	f.Add([]byte("1\t1\t2\t\t4\t5\t6\t7\t8\t9\t10\t11\t12\t13\ta\tb\tc\td\te\tf\tg\th\ti\tj\tk\tl\tm\tn\to\tp\tq\tr\ts\tt\tu\tv\tw\tx\ty\tz\n"), uint8(0))
	f.Add([]byte("id,click,hour,C1,banner_pos\n1,0,14102100,1005,0\n2,1,14102100,1005,1\n"), uint8(1))
	f.Add([]byte("uid,city,score,target\nu1,paris,1.5,yes\nu2,lyon,2.5,no\n"), uint8(2))
	f.Fuzz(func(t *testing.T, b []byte, format uint8) {
		var o Options
		switch format % 3 {
		case 0:
			o = Options{Format: FormatCriteo}
		case 1:
			o = Options{Format: FormatAvazu}
		default:
			o = Options{Format: FormatCSV, LabelCol: "target", Positive: []string{"yes"}, IDCol: "uid"}
		}
		o.TestFrac, o.SkipBadRows = -1, format&4 != 0
		s, err := LoadReader(bytes.NewReader(b), "fuzz", o)
		if err != nil {
			return
		}
		d := s.Train
		if d.Labels != nil && len(d.Labels) != len(d.IDs) {
			t.Fatalf("%d labels for %d IDs", len(d.Labels), len(d.IDs))
		}
	})
}

// FuzzReadEncoding feeds arbitrary bytes to the encoding reader; an
// encoding it accepts is written back and read again to the same bytes.
func FuzzReadEncoding(f *testing.F) {
	e := &Encoding{}
	var buf bytes.Buffer
	if _, err := e.WriteTo(&buf); err == nil {
		f.Add(buf.Bytes())
	}
	f.Add([]byte("{}"))
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := ReadEncoding(bytes.NewReader(b), "fuzz")
		if err != nil {
			return
		}
		var w1, w2 bytes.Buffer
		if _, err := e.WriteTo(&w1); err != nil {
			t.Fatalf("an accepted encoding does not write: %v", err)
		}
		e2, err := ReadEncoding(bytes.NewReader(w1.Bytes()), "again")
		if err != nil {
			t.Fatalf("a written encoding does not read: %v", err)
		}
		if _, err := e2.WriteTo(&w2); err != nil || !bytes.Equal(w1.Bytes(), w2.Bytes()) {
			t.Fatalf("the round trip changed the encoding (%v)", err)
		}
	})
}

// FuzzLoadReader feeds arbitrary tables to the CSV reader and Inspect
// with and without label values: either may refuse a table, but neither
// may panic, and a table both accept must agree on its column kinds.
func FuzzLoadReader(f *testing.F) {
	f.Add("id,x,c,y\n1,2.5,a,1\n2,NaN,b,0\n3,,a,1\n", "y", "")
	f.Add("x,y\nyes,no\n1,maybe\n\"q,\"\"t\",yes\n", "y", "yes")
	f.Add("a\tb\ty\n1\t?\t0\n", "y", "")
	f.Add("1,2,3\n4,5,6\n", "y", "")
	f.Add("id,n,y\n1,\"a\nb\",1\n2,\"c\"\"\r\nd\",0\n3,\"open,1\n", "y", "")
	f.Fuzz(func(t *testing.T, body, label, positive string) {
		o := Options{Format: FormatCSV, LabelCol: label, TestFrac: -1, SkipBadRows: true}
		if positive != "" {
			o.Positive = []string{positive}
		}
		s, err := LoadReader(strings.NewReader(body), "fuzz", o)
		r, ierr := InspectReader(bytes.NewReader([]byte(body)), "fuzz", o, 0)
		if err != nil || ierr != nil {
			return
		}
		kinds := map[string]ColumnKind{}
		for _, c := range r.Columns {
			kinds[c.Name] = c.Kind
		}
		for _, c := range s.Info.Columns {
			if k, ok := kinds[c.Name]; ok && (c.Kind == KindDense || c.Kind == KindCategorical) && k != c.Kind {
				t.Fatalf("column %q: Load says %s, Inspect %s", c.Name, c.Kind, k)
			}
		}
		if err := s.Train.X.Validate(); err != nil {
			t.Fatal(err)
		}
	})
}
