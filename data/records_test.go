package data

import (
	"io"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// decoded returns, per example ID, the row's label and its feature values
// as strings: each categorical value through the vocabulary, each dense
// value printed. It does not depend on the order of the vocabularies'
// ids, so two loads can be compared value by value.
func decoded(t *testing.T, s *Split) map[uint64][]string {
	t.Helper()
	vocab := map[string][]string{}
	for _, c := range s.Encoding.Columns {
		if c.Kind == KindCategorical {
			vocab[c.Name] = c.Vocab
		}
	}
	out := map[uint64][]string{}
	for _, d := range []*Dataset{s.Train, s.Test} {
		x := d.X
		for r, id := range d.IDs {
			var row []string
			if d.Labels != nil {
				row = append(row, string('0'+rune(d.Labels[r])))
			}
			for j := range x.NumCat {
				v := x.Cat[r*x.NumCat+j]
				if v == 0 {
					row = append(row, "<oov>")
				} else {
					row = append(row, vocab[x.CatNames[j]][v-1])
				}
			}
			for j := range x.NumDense {
				row = append(row, strconv.FormatFloat(float64(x.Dense[r*x.NumDense+j]), 'g', -1, 32))
			}
			if _, dup := out[id]; dup {
				t.Fatalf("ID %d twice", id)
			}
			out[id] = row
		}
	}
	return out
}

// TestQuotedLineBreaks: a CSV whose quoted fields hold line breaks (and
// doubled quotes) loads to the same rows as the same table with each line
// break inside a field written as "|", in every chunk size: a record is
// never split across chunks, and the vocabularies hold the values with
// their line breaks. Errors after a record of several lines name the
// right line.
func TestQuotedLineBreaks(t *testing.T) {
	t.Parallel()
	const multi = "id,note,x,y\n" +
		"1,\"hello\nworld\",1.5,1\n" + // lines 2-3
		"2,\"say \"\"hi\"\"\nthere\",2.5,0\n" + // lines 4-5
		"3,plain,3,1\n" + // line 6
		"4,\"multi\r\nline\n\nvalue\",4,0\n" + // lines 7-10, a blank line inside
		"5,\"a,b\",5,1\n" + // line 11
		"6,\"\n\",6,0\n" // lines 12-13
	const flat = "id,note,x,y\n" +
		"1,hello|world,1.5,1\n" +
		"2,\"say \"\"hi\"\"|there\",2.5,0\n" +
		"3,plain,3,1\n" +
		"4,multi|line||value,4,0\n" +
		"5,\"a,b\",5,1\n" +
		"6,|,6,0\n"
	o := Options{Format: FormatCSV, LabelCol: "y", IDCol: "id", Categorical: []string{"note"}, Dense: []string{"x"}, TestFrac: -1}
	for _, chunk := range []int{1, 2, 3, 4096} {
		o.chunkRows = chunk
		a, err := LoadReader(strings.NewReader(multi), "multi.csv", o)
		if err != nil {
			t.Fatalf("chunk %d: %v", chunk, err)
		}
		b, err := LoadReader(strings.NewReader(flat), "flat.csv", o)
		if err != nil {
			t.Fatal(err)
		}
		if a.Info.RowsRead != 6 || a.Train.X.Rows != 6 {
			t.Fatalf("chunk %d: %d rows read, %d loaded, want 6", chunk, a.Info.RowsRead, a.Train.X.Rows)
		}
		da, db := decoded(t, a), decoded(t, b)
		for id, rb := range db {
			ra := da[id]
			if len(ra) != len(rb) {
				t.Fatalf("chunk %d, ID %d: %q, want %q", chunk, id, ra, rb)
			}
			for k := range rb {
				if want := strings.ReplaceAll(rb[k], "|", "\n"); ra[k] != want {
					t.Errorf("chunk %d, ID %d, value %d: %q, want %q", chunk, id, k, ra[k], want)
				}
			}
		}
	}

	// Line numbers: a bad row after records of several lines, and a bad
	// record of several lines, are named by their first line.
	for _, c := range []struct{ body, want string }{
		{multi + "7,x,oops,1\n", "line 14: numeric column \"x\""},
		{multi + "7,\"x\ny\",7\n", "line 14: 3 fields, want 4"},
		{multi + "7,\"never closed,7,1\n8,b,8,0\n", "line 14: unterminated quoted field"},
		{"id,note,x,y\n1,\"a\"b\nc\",1,1\n", "line 2: unexpected 'b' after a closing quote"},
		{"id,note,x,y\n1,a\"b\nc\",1,1\n", "line 2: quote inside an unquoted field"},
	} {
		o.chunkRows = 2
		_, err := LoadReader(strings.NewReader(c.body), "t.csv", o)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: got %v, want %q", c.body[len(c.body)-20:], err, c.want)
		}
	}
}

// endless is a reader of x bytes that never ends a line; it counts what
// was read.
type endless struct{ n int64 }

func (e *endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'x'
	}
	e.n += int64(len(p))
	return len(p), nil
}

// TestRecordLengthBounded: a line longer than MaxRecordBytes is refused
// with an error naming it, after reading little more than the limit (the
// line here never ends), whether it is a data line, the header or a
// quoted field that never closes; a line of exactly the limit is read.
func TestRecordLengthBounded(t *testing.T) {
	o := Options{Format: FormatCSV, LabelCol: "y", TestFrac: -1}
	for _, c := range []struct {
		name, head, want string
	}{
		{"data line", "a,y\n1,0\nz,1\n2,", "line 4 is longer than 1048576 bytes"},
		{"header", "a,", "line 1 is longer than 1048576 bytes"},
		{"open quote", "a,y\n1,0\n\"z\nw\n", "line 3: the record starting there (a quoted field opened on it is still open on line 5) is longer than 1048576 bytes"},
	} {
		src := &endless{}
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		_, err := LoadReader(io.MultiReader(strings.NewReader(c.head), src), "long.csv", o)
		runtime.ReadMemStats(&after)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "long.csv") {
			t.Errorf("%s: got %v, want %q", c.name, err, c.want)
		}
		if src.n > 4*MaxRecordBytes {
			t.Errorf("%s: read %d bytes of the long line", c.name, src.n)
		}
		if grew := after.TotalAlloc - before.TotalAlloc; grew > 16*MaxRecordBytes {
			t.Errorf("%s: allocated %d bytes", c.name, grew)
		}
	}

	ok := "a,y\n" + strings.Repeat("x", MaxRecordBytes-2) + ",1\nb,0\n"
	s, err := LoadReader(strings.NewReader(ok), "limit.csv", o)
	if err != nil || s.Info.RowsRead != 2 {
		t.Fatalf("a record of exactly the limit: %v", err)
	}
	_, err = LoadReader(strings.NewReader("a,y\n"+strings.Repeat("x", MaxRecordBytes-1)+",1\nb,0\n"), "over.csv", o)
	if err == nil || !strings.Contains(err.Error(), "over.csv: line 2 is longer than") {
		t.Fatalf("a record one byte over the limit: %v", err)
	}
}
