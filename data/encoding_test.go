package data

import (
	"bytes"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// trainA is a training table: city and k categorical (k detected: not
// numeric), n dense. With no test split its vocabularies are, in byte
// order of the values, city: oslo 1, paris 2, rome 3; k: "" 1, x 2, y 3; n
// ranges over [10, 30] and a missing n takes the training mean 20.
const trainA = "id,label,city,n,k\n" +
	"1,1,paris,10,x\n" +
	"2,0,rome,20,y\n" +
	"3,1,paris,,x\n" +
	"4,0,oslo,30,\n"

var optsA = Options{Format: FormatCSV, LabelCol: "label", IDCol: "id", TestFrac: -1}

// TestLoadWithAppliesTheSavedEncoding encodes a new file, whose columns
// are in another order, with an extra column, no label and values never
// seen in training, with the encoding saved from trainA, and checks the
// ids and scaled values derived by hand.
func TestLoadWithAppliesTheSavedEncoding(t *testing.T) {
	a, err := Load(writeFile(t, "a.csv", trainA), optsA)
	if err != nil {
		t.Fatal(err)
	}
	encPath := filepath.Join(t.TempDir(), "encoding")
	if err := SaveEncoding(encPath, a.Encoding); err != nil {
		t.Fatal(err)
	}
	enc, err := LoadEncoding(encPath)
	if err != nil {
		t.Fatal(err)
	}
	b := writeFile(t, "b.csv", "k,extra,n,city,id\n"+
		"y,foo,15,rome,7\n"+ // city rome 3, k y 3, n (15-10)/20
		"z,bar,45,berlin,8\n"+ // unseen → 0, 0; n above the range → 1
		",baz,-3,paris,9\n"+ // k NA 1, city paris 2; n below → 0
		"x,qux,6,oslo,10\n"+ // 1, 2; n below → 0
		"x,,NaN,oslo,11\n") // n missing ↦ 20 → 0.5
	s, err := LoadWith(b, Options{NoLabel: true, TestFrac: -1}, enc)
	if err != nil {
		t.Fatal(err)
	}
	x := s.Train.X
	if !slices.Equal(s.Train.IDs, []uint64{7, 8, 9, 10, 11}) || s.Train.Labels != nil || len(s.Test.IDs) != 0 {
		t.Fatalf("IDs %v, labels %v, %d test rows", s.Train.IDs, s.Train.Labels, len(s.Test.IDs))
	}
	if !slices.Equal(x.CatNames, []string{"city", "k"}) || !slices.Equal(x.DenseNames, []string{"n"}) || !slices.Equal(x.Cardinality, []int{4, 4}) {
		t.Fatalf("columns %v %v, cardinalities %v; want city, k; n; 4, 4", x.CatNames, x.DenseNames, x.Cardinality)
	}
	wantCat := []int32{3, 3, 0, 0, 2, 1, 1, 2, 1, 2}
	wantDense := []float32{0.25, 1, 0, 0, 0.5}
	if !slices.Equal(x.Cat, wantCat) || !slices.Equal(x.Dense, wantDense) {
		t.Fatalf("categorical ids %v, want %v; dense %v, want %v", x.Cat, wantCat, x.Dense, wantDense)
	}
	oov := map[string]int64{}
	for _, c := range s.Info.Columns {
		oov[c.Name] = c.OOV
	}
	if oov["city"] != 1 || oov["k"] != 1 {
		t.Errorf("out-of-vocabulary counts %v, want city 1, k 1", oov)
	}
	if s.Encoding != enc {
		t.Errorf("the split's encoding is not the one applied")
	}
}

// TestLoadWithRefuses checks the errors of LoadWith: a column of the
// encoding missing from the file, options that disagree with the encoding
// and a label the file lacks, each named.
func TestLoadWithRefuses(t *testing.T) {
	a, err := Load(writeFile(t, "a.csv", trainA), optsA)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, body string
		o          Options
		want       []string
	}{
		{"missing column", "id,city,n\n1,rome,3\n", Options{NoLabel: true}, []string{`column "k"`, "missing.csv", "not in the file"}},
		{"hash buckets", "id,city,n,k\n1,rome,3,x\n", Options{NoLabel: true, HashBuckets: 10}, []string{"10 hash buckets", `"city"`}},
		{"format", "id,city,n,k\n1,rome,3,x\n", Options{Format: FormatAvazu, NoLabel: true}, []string{`format "avazu"`}},
		{"kind", "id,city,n,k\n1,rome,3,x\n", Options{NoLabel: true, Dense: []string{"city"}}, []string{`"city" declared dense`}},
		{"label", "id,city,n,k\n1,rome,3,x\n", Options{}, []string{`label column "label" (key label) is not in the header`}},
	}
	for _, c := range cases {
		_, err := LoadWith(writeFile(t, "missing.csv", c.body), c.o, a.Encoding)
		for _, w := range c.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %v, want one containing %q", c.name, err, w)
			}
		}
	}
}

// TestLoadWithReproducesLoad loads synthetic Criteo data with every
// vocabulary option, then loads the same file with the encoding learnt:
// the features are identical (the encoding holds everything Load learnt),
// and a test value that was out of vocabulary stays so.
func TestLoadWithReproducesLoad(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteSynth(&buf, 3000, 0.25, 9); err != nil {
		t.Fatal(err)
	}
	path := writeFile(t, "synth.txt", buf.String())
	for _, o := range []Options{
		{Seed: 4},
		{Seed: 5, MinCount: 3, LogDense: true, TestFrac: 0.3},
		{Seed: 6, HashBuckets: 50, Sample: 0.5},
		{Seed: 7, NoLabel: true, Columns: []string{"C3", "I2", "C1"}},
	} {
		want, err := Load(path, o)
		if err != nil {
			t.Fatal(err)
		}
		var file bytes.Buffer
		if _, err := want.Encoding.WriteTo(&file); err != nil {
			t.Fatal(err)
		}
		enc, err := ReadEncoding(&file, "buffer")
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(enc, want.Encoding) {
			t.Fatalf("%+v: the encoding read back differs from the one written", o)
		}
		got, err := LoadWith(path, o, enc)
		if err != nil {
			t.Fatalf("%+v: %v", o, err)
		}
		for _, p := range []struct{ g, w *Dataset }{{got.Train, want.Train}, {got.Test, want.Test}} {
			if !reflect.DeepEqual(p.g, p.w) {
				t.Fatalf("%+v: LoadWith with Load's own encoding gives other rows or features", o)
			}
		}
	}
}

// TestEncodingFile round-trips an encoding with a non-UTF-8 value, the
// empty value, hashing and a log-scaled dense column, and checks that a
// corrupt or truncated file is refused.
func TestEncodingFile(t *testing.T) {
	enc := &Encoding{Format: FormatCSV, IDCol: "id", LabelCol: "y", Positive: []string{"yes"}, MinCount: 2, Columns: []ColumnEncoding{
		{Name: "a", Kind: KindCategorical, Vocab: []string{"\xff\xfe", "", "é"}},
		{Name: "b", Kind: KindDense, Min: -1.5, Max: 0.1, Log: true},
		{Name: "c", Kind: KindCategorical, Buckets: 7},
		{Name: "d", Kind: KindCategorical, Vocab: []string{}},
	}}
	var buf bytes.Buffer
	if _, err := enc.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	raw := buf.Bytes()
	header, _, _ := bytes.Cut(raw, []byte("\n"))
	if !bytes.Contains(header, []byte(`"name":"a","kind":"categorical","vocabulary":3`)) {
		t.Errorf("header %s does not list column a's vocabulary size", header)
	}
	got, err := ReadEncoding(bytes.NewReader(raw), "x")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, enc) {
		t.Fatalf("read back %+v, wrote %+v", got, enc)
	}
	for _, c := range []struct {
		name string
		data []byte
		want string
	}{
		{"corrupt value", slices.Concat(raw[:len(header)+2], []byte{'X'}, raw[len(header)+3:]), "checksum"},
		{"truncated", raw[:len(raw)-6], "unexpected EOF"},
		{"trailing", append(slices.Clone(raw), 0), "after the checksum"},
		{"not an encoding", []byte("hello\n"), "header"},
	} {
		if _, err := ReadEncoding(bytes.NewReader(c.data), "f"); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
		}
	}
	bad := *enc
	bad.Columns = []ColumnEncoding{{Name: "a", Kind: KindCategorical, Vocab: []string{"v", "v"}}}
	if _, err := LoadReaderWith(strings.NewReader("id,y,a\n1,yes,v\n"), "dup.csv", Options{}, &bad); err == nil || !strings.Contains(err.Error(), `value "v" has ids 1 and 2`) {
		t.Errorf("duplicate vocabulary value: %v", err)
	}
	if _, err := LoadEncoding(filepath.Join(t.TempDir(), "none")); err == nil || !strings.Contains(err.Error(), "none") {
		t.Errorf("missing file: %v", err)
	}
}
