package data

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// TestVocabulariesIndependentOfRowOrder loads a table of 3,000 rows
// (categorical columns with repeats, empty values and rare values, a
// numeric column with missing cells, a test split, MinCount 2) and the
// same rows reversed and shuffled, in small and large chunks: every ID's
// encoded row, the encodings (vocabularies, scaling) and the column
// statistics must be identical. The vocabularies must be in byte order.
func TestVocabulariesIndependentOfRowOrder(t *testing.T) {
	t.Parallel()
	src, err := os.ReadFile(chunkTable(t, 3000, false))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(src), "\n"), "\n")
	header, rows := lines[0], lines[1:]
	rev := slices.Clone(rows)
	slices.Reverse(rev)
	shuf := slices.Clone(rows)
	rand.New(rand.NewPCG(1, 2)).Shuffle(len(shuf), func(i, j int) { shuf[i], shuf[j] = shuf[j], shuf[i] })
	dir := t.TempDir()
	write := func(name string, rows []string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(header+"\n"+strings.Join(rows, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	o := Options{Format: FormatCSV, LabelCol: "label", IDCol: "id", Categorical: []string{"a", "b", "y"}, MinCount: 2, TestFrac: 0.2, Seed: 3}

	type byID struct {
		label uint8
		cat   []int32
		dense []float32
	}
	flatten := func(s *Split) map[uint64]byID {
		out := map[uint64]byID{}
		for _, d := range []*Dataset{s.Train, s.Test} {
			x := d.X
			for r, id := range d.IDs {
				out[id] = byID{d.Labels[r], x.Cat[r*x.NumCat : (r+1)*x.NumCat], x.Dense[r*x.NumDense : (r+1)*x.NumDense]}
			}
		}
		return out
	}
	ref, err := Load(write("orig.csv", rows), o)
	if err != nil {
		t.Fatal(err)
	}
	want := flatten(ref)
	if len(want) != 3000 {
		t.Fatalf("%d IDs", len(want))
	}
	for _, c := range ref.Encoding.Columns {
		if c.Kind == KindCategorical {
			if len(c.Vocab) < 10 || !slices.IsSorted(c.Vocab) {
				t.Errorf("column %s: vocabulary of %d values, sorted %v", c.Name, len(c.Vocab), slices.IsSorted(c.Vocab))
			}
		}
	}
	for _, tc := range []struct {
		name  string
		rows  []string
		chunk int
	}{
		{"reversed", rev, 4096},
		{"shuffled", shuf, 4096},
		{"shuffled, small chunks", shuf, 7},
	} {
		oc := o
		oc.chunkRows = tc.chunk
		s, err := Load(write(tc.name+".csv", tc.rows), oc)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(s.Encoding, ref.Encoding) {
			t.Errorf("%s: the encoding differs", tc.name)
		}
		for i := range ref.Info.Columns {
			if a, b := s.Info.Columns[i], ref.Info.Columns[i]; a != b {
				t.Errorf("%s: column %+v, want %+v", tc.name, a, b)
			}
		}
		got := flatten(s)
		for id, w := range want {
			if g, ok := got[id]; !ok || !reflect.DeepEqual(g, w) {
				t.Fatalf("%s: ID %d encodes to %v, want %v", tc.name, id, g, w)
			}
		}
	}
}

// TestOldEncodingOrderStillApplies: an encoding saved when vocabularies
// followed first appearance (not byte order) applies with its own ids.
func TestOldEncodingOrderStillApplies(t *testing.T) {
	enc := &Encoding{Format: FormatCSV, IDCol: "id", LabelCol: "y", Columns: []ColumnEncoding{
		{Name: "c", Kind: KindCategorical, Vocab: []string{"paris", "rome", "oslo"}},
	}}
	s, err := LoadReaderWith(strings.NewReader("id,c,y\n1,oslo,1\n2,paris,0\n3,rome,1\n4,lyon,0\n"), "old.csv", Options{TestFrac: -1}, enc)
	if err != nil {
		t.Fatal(err)
	}
	if want := []int32{3, 1, 2, 0}; !slices.Equal(s.Train.X.Cat, want) {
		t.Fatalf("ids %v, want %v", s.Train.X.Cat, want)
	}
}
