package data

import (
	"bytes"
	"strings"
	"testing"
)

// FuzzLoadReader feeds arbitrary tables to the CSV reader and Inspect
// with and without label values: either may refuse a table, but neither
// may panic, and a table both accept must agree on its column kinds.
func FuzzLoadReader(f *testing.F) {
	f.Add("id,x,c,y\n1,2.5,a,1\n2,NaN,b,0\n3,,a,1\n", "y", "")
	f.Add("x,y\nyes,no\n1,maybe\n\"q,\"\"t\",yes\n", "y", "yes")
	f.Add("a\tb\ty\n1\t?\t0\n", "y", "")
	f.Add("1,2,3\n4,5,6\n", "y", "")
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
