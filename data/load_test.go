package data

import (
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const (
	criteoSample = "/work/shared/data/criteo_sample.txt"
	avazuSample  = "/work/shared/data/avazu_sample.txt"
)

func TestLoadShippedSamples(t *testing.T) {
	cases := []struct {
		path, format    string
		rows, positives int
		numCat, numDns  int
	}{
		{criteoSample, FormatCriteo, 200, 49, 26, 13},
		{avazuSample, FormatAvazu, 100, 20, 22, 0},
	}
	for _, c := range cases {
		if _, err := os.Stat(c.path); err != nil {
			t.Skipf("sample not available: %v", err)
		}
		s, err := Load(c.path, Options{Format: c.format, Seed: 7})
		if err != nil {
			t.Fatalf("%s: %v", c.path, err)
		}
		in := s.Info
		if in.RowsRead != int64(c.rows) || in.RowsKept != int64(c.rows) || in.Train.Rows+in.Test.Rows != c.rows {
			t.Errorf("%s: read %d kept %d train %d test %d, want %d rows", c.path, in.RowsRead, in.RowsKept, in.Train.Rows, in.Test.Rows, c.rows)
		}
		if in.Train.Positives+in.Test.Positives != c.positives {
			t.Errorf("%s: %d+%d positives, want %d", c.path, in.Train.Positives, in.Test.Positives, c.positives)
		}
		for _, ds := range []*Dataset{s.Train, s.Test} {
			if ds.X.NumCat != c.numCat || ds.X.NumDense != c.numDns {
				t.Errorf("%s: %d categorical, %d dense columns; want %d, %d", c.path, ds.X.NumCat, ds.X.NumDense, c.numCat, c.numDns)
			}
			if err := ds.X.Validate(); err != nil {
				t.Errorf("%s: %v", c.path, err)
			}
			for _, v := range ds.X.Dense {
				if v < 0 || v > 1 {
					t.Fatalf("%s: dense value %v outside [0, 1]", c.path, v)
				}
			}
		}
	}
	// Avazu ids exceed int64: the third data row's id must be kept exactly.
	s, err := Load(avazuSample, Options{Format: FormatAvazu})
	if err != nil {
		t.Fatal(err)
	}
	const big = 10000169349117863715
	if !slices.Contains(s.Train.IDs, big) && !slices.Contains(s.Test.IDs, big) {
		t.Errorf("avazu id %d not among the loaded ids", uint64(big))
	}
	// Criteo's IDs are row numbers 0..199.
	s, err = Load(criteoSample, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ids := slices.Concat(s.Train.IDs, s.Test.IDs)
	slices.Sort(ids)
	for i, id := range ids {
		if id != uint64(i) {
			t.Fatalf("criteo ids: position %d holds %d", i, id)
		}
	}
}

// seedFor finds a seed whose split of ids puts exactly the listed ones in
// test (brute force over seeds with Assign).
func seedFor(t *testing.T, ids []uint64, test []uint64, frac float64) uint64 {
	for seed := uint64(0); seed < 100000; seed++ {
		ok := true
		for _, id := range ids {
			_, isTest := Assign(seed, id, 1, frac)
			if isTest != slices.Contains(test, id) {
				ok = false
				break
			}
		}
		if ok {
			return seed
		}
	}
	t.Fatal("no seed gives the wanted split")
	return 0
}

func TestEncodingRules(t *testing.T) {
	// testdata/tiny.csv, rows 10, 11, 12 in train and 13, 14 in test:
	//   a: train u v u → u=1 v=2 (byte order); test "" and w unseen → 0 (OOV).
	//   b: train p "" q → ""=1 p=2 q=3 (byte order); test p p → 2 2.
	//   x: train 2 4 NA → min 2, max 4, NA takes the training mean 3 →
	//      0 1 .5; test 1 → 0, 6 → 1 (both clipped).
	seed := seedFor(t, []uint64{10, 11, 12, 13, 14}, []uint64{13, 14}, 0.5)
	base := Options{Format: FormatCSV, LabelCol: "y", IDCol: "id", TestFrac: 0.5, Seed: seed}
	cases := []struct {
		name                 string
		mod                  func(*Options)
		trainCat, testCat    []int32 // row-major, columns a, b
		card                 []int
		trainDense, testDens []float64
	}{
		{"vocabulary", func(*Options) {},
			[]int32{1, 2, 2, 1, 1, 3}, []int32{0, 2, 0, 2}, []int{3, 4},
			[]float64{0, 1, .5}, []float64{0, 1}},
		{"min count 2", func(o *Options) { o.MinCount = 2 },
			[]int32{1, 0, 0, 0, 1, 0}, []int32{0, 0, 0, 0}, []int{2, 1},
			[]float64{0, 1, .5}, []float64{0, 1}},
		// log: 2 → ln 3, 4 → ln 5, NA → their mean, halfway; test 1 → ln 2 < ln 3 → 0.
		{"log dense", func(o *Options) { o.LogDense = true },
			[]int32{1, 2, 2, 1, 1, 3}, []int32{0, 2, 0, 2}, []int{3, 4},
			[]float64{0, 1, .5}, []float64{0, 1}},
	}
	for _, c := range cases {
		o := base
		c.mod(&o)
		s, err := Load("testdata/tiny.csv", o)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		tr, te := s.Train, s.Test
		if !slices.Equal(tr.IDs, []uint64{10, 11, 12}) || !slices.Equal(te.IDs, []uint64{13, 14}) {
			t.Fatalf("%s: ids %v / %v", c.name, tr.IDs, te.IDs)
		}
		if !slices.Equal(tr.Labels, []uint8{1, 0, 1}) || !slices.Equal(te.Labels, []uint8{0, 0}) {
			t.Errorf("%s: labels %v / %v", c.name, tr.Labels, te.Labels)
		}
		if !slices.Equal(tr.X.CatNames, []string{"a", "b"}) || !slices.Equal(tr.X.DenseNames, []string{"x"}) {
			t.Errorf("%s: columns %v %v", c.name, tr.X.CatNames, tr.X.DenseNames)
		}
		if !slices.Equal(tr.X.Cat, c.trainCat) || !slices.Equal(te.X.Cat, c.testCat) {
			t.Errorf("%s: categorical ids %v / %v, want %v / %v", c.name, tr.X.Cat, te.X.Cat, c.trainCat, c.testCat)
		}
		if !slices.Equal(tr.X.Cardinality, c.card) || !slices.Equal(te.X.Cardinality, c.card) {
			t.Errorf("%s: cardinalities %v, want %v", c.name, tr.X.Cardinality, c.card)
		}
		for i, w := range c.trainDense {
			if math.Abs(float64(tr.X.Dense[i])-w) > 1e-6 {
				t.Errorf("%s: train dense[%d] = %v, want %v", c.name, i, tr.X.Dense[i], w)
			}
		}
		for i, w := range c.testDens {
			if math.Abs(float64(te.X.Dense[i])-w) > 1e-6 {
				t.Errorf("%s: test dense[%d] = %v, want %v", c.name, i, te.X.Dense[i], w)
			}
		}
		for _, ds := range []*Dataset{tr, te} {
			if err := ds.X.Validate(); err != nil {
				t.Errorf("%s: %v", c.name, err)
			}
		}
	}
	// Column info for the plain case.
	s, err := Load("testdata/tiny.csv", base)
	if err != nil {
		t.Fatal(err)
	}
	a, b, x := s.Info.Columns[2], s.Info.Columns[3], s.Info.Columns[4]
	if a.Seen != 2 || a.TestOOV != 2 || a.NA != 1 || b.Seen != 3 || b.TestOOV != 0 || b.NA != 1 || x.Min != 2 || x.Max != 4 || x.Missing != 3 || x.NA != 1 {
		t.Errorf("column info a %+v b %+v x %+v", a, b, x)
	}
	if s.Info.Columns[0].Kind != KindLabel || s.Info.Columns[1].Kind != KindID || a.Kind != KindCategorical || x.Kind != KindDense {
		t.Errorf("kinds %v %v %v %v", s.Info.Columns[0].Kind, s.Info.Columns[1].Kind, a.Kind, x.Kind)
	}
}

func TestHashBuckets(t *testing.T) {
	seed := seedFor(t, []uint64{10, 11, 12, 13, 14}, []uint64{13, 14}, 0.5)
	s, err := Load("testdata/tiny.csv", Options{Format: FormatCSV, LabelCol: "y", IDCol: "id", TestFrac: 0.5, Seed: seed, HashBuckets: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(s.Train.X.Cardinality, []int{1000, 1000}) {
		t.Errorf("cardinalities %v", s.Train.X.Cardinality)
	}
	cat := slices.Concat(s.Train.X.Cat, s.Test.X.Cat) // rows 10..14, columns a, b
	// Equal values get equal ids: a is u,v,u,"",w; b is p,"",q,p,p.
	if cat[0] != cat[4] || cat[1] != cat[7] || cat[7] != cat[9] {
		t.Errorf("equal values hashed apart: %v", cat)
	}
	// The same strings in different columns use different hashes (salted
	// by column name); with 1000 buckets a collision of all five is
	// implausible.
	distinct := map[int32]bool{}
	for _, v := range []int32{cat[0], cat[2], cat[6], cat[8]} { // u, v, "", w in column a
		distinct[v] = true
	}
	if len(distinct) < 3 {
		t.Errorf("hashing collapsed distinct values: %v", cat)
	}
}

func writeFile(t *testing.T, name, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestBadInput(t *testing.T) {
	hdr := "label,I1,C1\n"
	cases := []struct {
		name, body string
		o          Options
		wantErr    string // substring; "" means success
		bad        int64
	}{
		{"empty file", "", Options{}, "empty file", 0},
		{"blank lines only", "\n\n", Options{}, "empty file", 0},
		{"header only", hdr, Options{}, "no data rows", 0},
		{"wrong field count", hdr + "0,1,a\n1,2\n", Options{}, "line 3: 2 fields, want 3", 0},
		{"bad number", hdr + "0,1,a\n1,x1,b\n", Options{}, `line 3: numeric column "I1": "x1" is not a number`, 0},
		{"bad label", hdr + "0,1,a\n2,1,b\n", Options{}, `line 3: label "2" in column "label" is not 0 or 1; the label column "label" holds "0" ×1, "2" ×1; name the positive values (key positive)`, 0},
		{"empty label", hdr + "0,1,a\n,1,b\n", Options{}, `line 3: label "" in column "label" is not 0 or 1`, 0},
		{"missing label column", "I1,C1\n1,a\n", Options{}, `no label column "label", the criteo format's, in the header, which names "I1", "C1": name the label column (key label)`, 0},
		{"missing named label", hdr + "0,1,a\n", Options{Format: FormatCSV, LabelCol: "click"}, `label column "click" (key label) is not in the header, which names "label", "I1", "C1"`, 0},
		{"one class", hdr + "0,1,a\n0,2,b\n", Options{TestFrac: -1}, "only one class", 0},
		{"no rows after sampling", hdr + "0,1,a\n1,2,b\n", Options{Sample: 1e-9}, "no training rows after sampling", 0},
		{"skip bad rows", hdr + "0,1,a\n1,2\n1,x,b\n3,1,c\n1,1,d\n", Options{SkipBadRows: true, TestFrac: -1}, "", 3},
		{"all rows bad", hdr + "1,2\n", Options{SkipBadRows: true}, "all 1 data rows are malformed", 1},
		{"criteo 39 fields needs NoLabel", strings.Repeat("\t", 38) + "\n", Options{}, `no label column "label"`, 0},
		{"unknown dense column", hdr + "0,1,a\n", Options{Dense: []string{"I9"}}, `dense column "I9" not found`, 0},
		{"unknown requested column", hdr + "0,1,a\n", Options{Columns: []string{"C9"}}, `requested column "C9" not found`, 0},
		{"dense and categorical", hdr, Options{Dense: []string{"I1"}, Categorical: []string{"I1"}}, "both dense and categorical", 0},
		{"avazu bad id", "id,click,x\n12,0,a\n-3,1,b\n", Options{Format: FormatAvazu}, `line 3: ID "-3" in column "id" is not an unsigned integer`, 0},
		{"duplicate header", "label,a,a\n0,1,2\n", Options{Format: FormatCSV, LabelCol: "label"}, `names column "a" twice`, 0},
		{"bad format", hdr, Options{Format: "parquet"}, `unknown format "parquet"`, 0},
		{"bad sample", hdr, Options{Sample: 1.5}, "sample fraction", 0},
		{"unterminated quote", "y,a\n1,\"x\n", Options{Format: FormatCSV, LabelCol: "y"}, "line 2: unterminated quoted field", 0},
	}
	for _, c := range cases {
		p := writeFile(t, "t.csv", c.body)
		s, err := Load(p, c.o)
		if c.wantErr == "" {
			if err != nil {
				t.Errorf("%s: %v", c.name, err)
				continue
			}
			if s.Info.BadRows != c.bad || len(s.Info.BadExamples) != int(c.bad) {
				t.Errorf("%s: %d bad rows (%d examples), want %d", c.name, s.Info.BadRows, len(s.Info.BadExamples), c.bad)
			}
			continue
		}
		if err == nil {
			t.Errorf("%s: no error, want %q", c.name, c.wantErr)
			continue
		}
		if !strings.Contains(err.Error(), c.wantErr) {
			t.Errorf("%s: error %q, want it to contain %q", c.name, err, c.wantErr)
		}
		if strings.Contains(c.wantErr, "line ") && !strings.Contains(err.Error(), p) {
			t.Errorf("%s: error %q does not name the file", c.name, err)
		}
	}
}

func TestSkipBadRowsKeepsRowNumbers(t *testing.T) {
	// Criteo IDs are data row numbers; a skipped row still uses its number.
	p := writeFile(t, "t.csv", "label,I1,C1\n0,1,a\nbad\n1,2,b\n0,3,c\n")
	s, err := Load(p, Options{SkipBadRows: true, TestFrac: -1})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(s.Train.IDs, []uint64{0, 2, 3}) || s.Info.RowsRead != 4 || s.Info.BadRows != 1 {
		t.Errorf("ids %v, read %d, bad %d", s.Train.IDs, s.Info.RowsRead, s.Info.BadRows)
	}
	if !strings.Contains(s.Info.BadExamples[0], "line 3") {
		t.Errorf("bad example %q does not name line 3", s.Info.BadExamples[0])
	}
}

func TestCriteoTSV(t *testing.T) {
	row := func(label string, i1, c1 string) string {
		f := make([]string, 0, 40)
		if label != "-" {
			f = append(f, label)
		}
		f = append(f, i1)
		for range 12 {
			f = append(f, "")
		}
		f = append(f, c1)
		for range 25 {
			f = append(f, "")
		}
		return strings.Join(f, "\t") + "\n"
	}
	p := writeFile(t, "train.txt", row("0", "3", "aa")+row("1", "", "bb")+row("0", "7", "aa"))
	s, err := Load(p, Options{TestFrac: -1})
	if err != nil {
		t.Fatal(err)
	}
	x := s.Train.X
	if s.Info.Header || s.Info.Delimiter != '\t' || x.NumDense != 13 || x.NumCat != 26 || x.DenseNames[0] != "I1" || x.CatNames[25] != "C26" {
		t.Fatalf("layout: header %v delim %q dense %d cat %d", s.Info.Header, s.Info.Delimiter, x.NumDense, x.NumCat)
	}
	// I1: 3, NA→0, 7 → min 0, max 7. C1: aa bb aa → 1 2 1; C2 all NA → 1.
	if got := []float32{x.Dense[0], x.Dense[13], x.Dense[26]}; math.Abs(float64(got[0])-3.0/7) > 1e-6 || got[1] != 0 || got[2] != 1 {
		t.Errorf("I1 scaled to %v, want [3/7 0 1]", got)
	}
	if got := []int32{x.Cat[0], x.Cat[26], x.Cat[52], x.Cat[1]}; !slices.Equal(got, []int32{1, 2, 1, 1}) {
		t.Errorf("C1, C2 ids %v, want [1 2 1 1]", got)
	}
	if !slices.Equal(s.Train.Labels, []uint8{0, 1, 0}) || !slices.Equal(s.Train.IDs, []uint64{0, 1, 2}) {
		t.Errorf("labels %v ids %v", s.Train.Labels, s.Train.IDs)
	}
	// The passive party's file: 39 fields, no label.
	p = writeFile(t, "passive.txt", row("-", "3", "aa")+row("-", "", "bb"))
	s, err = Load(p, Options{NoLabel: true, TestFrac: -1})
	if err != nil {
		t.Fatal(err)
	}
	if s.Train.Labels != nil || s.Info.HasLabels || s.Train.X.Rows != 2 {
		t.Errorf("no-label load: labels %v rows %d", s.Train.Labels, s.Train.X.Rows)
	}
}

func TestGenericCSV(t *testing.T) {
	body := "uid,city,score,zip,target\nu1,paris,1.5,75001,yes\nu2,lyon,2.5,69001,no\nu3,,0.5,75002,yes\nu4,nice,,06000,maybe\n"
	p := writeFile(t, "t.csv", body)
	o := Options{Format: FormatCSV, LabelCol: "target", Positive: []string{"yes"}, IDCol: "uid", TestFrac: -1}
	// A third value besides "yes" and "no" is never silently negative.
	want := `line 5: label "maybe" in column "target" is neither positive ["yes"] nor "no", the value taken as negative so far; ` +
		`the label column "target" holds "yes" ×2, "maybe" ×1, "no" ×1; name the negative values (key negative)`
	if _, err := Load(p, o); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("third label value: error %v, want %q", err, want)
	}
	o.Negative = []string{"no", "maybe"}
	s, err := Load(p, o)
	if err != nil {
		t.Fatal(err)
	}
	x := s.Train.X
	// city is text → categorical; score and zip are numbers → dense.
	if !slices.Equal(x.CatNames, []string{"city"}) || !slices.Equal(x.DenseNames, []string{"score", "zip"}) {
		t.Errorf("detected categorical %v dense %v", x.CatNames, x.DenseNames)
	}
	// Positive "yes", "no" and "maybe" negative.
	if !slices.Equal(s.Train.Labels, []uint8{1, 0, 1, 0}) {
		t.Errorf("labels %v", s.Train.Labels)
	}
	if want := []uint64{HashID("u1"), HashID("u2"), HashID("u3"), HashID("u4")}; !slices.Equal(s.Train.IDs, want) {
		t.Errorf("hashed ids %v, want %v", s.Train.IDs, want)
	}
	// Declared kinds and a restricted column set.
	o.Categorical = []string{"zip"}
	o.Columns = []string{"zip", "score"}
	s, err = Load(p, o)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(s.Train.X.CatNames, []string{"zip"}) || !slices.Equal(s.Train.X.DenseNames, []string{"score"}) {
		t.Errorf("declared: categorical %v dense %v", s.Train.X.CatNames, s.Train.X.DenseNames)
	}
	// zip as categories 75001 69001 75002 06000 → 3 2 4 1, the values'
	// byte order ("06000" keeps its zero).
	if !slices.Equal(s.Train.X.Cat, []int32{3, 2, 4, 1}) {
		t.Errorf("zip ids %v", s.Train.X.Cat)
	}
	// With a declared negative value, "maybe" is a bad label.
	o.Negative = []string{"no"}
	if _, err := Load(p, o); err == nil || !strings.Contains(err.Error(), `line 5: label "maybe" in column "target" is neither positive ["yes"] nor negative ["no"]`) {
		t.Errorf("negative value: error %v", err)
	}
	// ... or, with bad rows skipped, counted and skipped.
	o.SkipBadRows = true
	if s, err := Load(p, o); err != nil || s.Info.BadRows != 1 || !slices.Equal(s.Train.Labels, []uint8{1, 0, 1}) {
		t.Errorf("skipped third value: %v", err)
	}
	// A csv table needs its label column named, or no labels asked for.
	if _, err := Load(p, Options{Format: FormatCSV, IDCol: "uid"}); err == nil || !strings.Contains(err.Error(), "no label column named (key label)") {
		t.Errorf("csv without a label column: error %v", err)
	}
	s, err = Load(p, Options{Format: FormatCSV, IDCol: "uid", TestFrac: -1, NoLabel: true})
	if err != nil {
		t.Fatal(err)
	}
	if s.Train.Labels != nil {
		t.Errorf("labels %v without a label column", s.Train.Labels)
	}
	// A later non-number in a column detected as dense is a bad row.
	p = writeFile(t, "t2.csv", "y,v\n1,2\n0,3\n1,oops\n")
	if _, err := Load(p, Options{Format: FormatCSV, LabelCol: "y", DetectRows: 2, TestFrac: -1}); err == nil || !strings.Contains(err.Error(), "line 4") {
		t.Errorf("late non-number: error %v", err)
	}
}

func TestSplitDeterminismAndParties(t *testing.T) {
	o := Options{Seed: 42, Sample: 0.6, TestFrac: 0.3}
	a, err := Load(criteoSample, o)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Load(criteoSample, o)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(a.Train.IDs, b.Train.IDs) || !slices.Equal(a.Test.IDs, b.Test.IDs) || !slices.Equal(a.Train.X.Cat, b.Train.X.Cat) || !slices.Equal(a.Train.X.Dense, b.Train.X.Dense) {
		t.Error("two loads with the same options differ")
	}
	// The split reproduces from the IDs alone.
	for id := uint64(0); id < 200; id++ {
		kept, test := Assign(42, id, 0.6, 0.3)
		inTrain, inTest := slices.Contains(a.Train.IDs, id), slices.Contains(a.Test.IDs, id)
		if inTrain != (kept && !test) || inTest != (kept && test) {
			t.Fatalf("id %d: train %v test %v, Assign says kept %v test %v", id, inTrain, inTest, kept, test)
		}
	}
	c, err := Load(criteoSample, Options{Seed: 43, Sample: 0.6, TestFrac: 0.3})
	if err != nil {
		t.Fatal(err)
	}
	if slices.Equal(a.Train.IDs, c.Train.IDs) {
		t.Error("seeds 42 and 43 give the same sample")
	}
	// Two parties with different columns agree on the split: the active
	// party loads label + C1..C5, the passive the rest without labels.
	act, err := Load(criteoSample, Options{Seed: 9, Sample: 0.5, Columns: []string{"C1", "C2", "C3", "C4", "C5"}})
	if err != nil {
		t.Fatal(err)
	}
	pas, err := Load(criteoSample, Options{Seed: 9, Sample: 0.5, NoLabel: true, Columns: []string{"I1", "I2", "C6", "C26"}})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(act.Train.IDs, pas.Train.IDs) || !slices.Equal(act.Test.IDs, pas.Test.IDs) {
		t.Error("the parties' splits differ")
	}
	if pas.Train.Labels != nil || act.Train.X.NumCat != 5 || act.Train.X.NumDense != 0 || pas.Train.X.NumCat != 2 || pas.Train.X.NumDense != 2 {
		t.Errorf("party columns: active %d/%d passive %d/%d", act.Train.X.NumCat, act.Train.X.NumDense, pas.Train.X.NumCat, pas.Train.X.NumDense)
	}
}

func TestAssignRates(t *testing.T) {
	// Brute force: the sample and test shares match their probabilities
	// within 5 binomial standard deviations, independently of each other.
	const n = 200000
	kept, test, both := 0, 0, 0
	for id := uint64(0); id < n; id++ {
		k, te := Assign(3, id, 0.1, 0.2)
		if k {
			kept++
		}
		if te {
			test++
		}
		if k && te {
			both++
		}
	}
	check := func(what string, got int, p float64, m int) {
		sd := math.Sqrt(float64(m) * p * (1 - p))
		if math.Abs(float64(got)-p*float64(m)) > 5*sd {
			t.Errorf("%s: %d of %d, want %.0f ± %.0f", what, got, m, p*float64(m), 5*sd)
		}
	}
	check("kept", kept, 0.1, n)
	check("test", test, 0.2, n)
	check("test among kept", both, 0.2, kept)
}
