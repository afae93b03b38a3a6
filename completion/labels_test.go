package completion

import (
	"maps"
	"strings"
	"testing"
)

func TestReadLabels(t *testing.T) {
	for _, c := range []struct {
		in   string
		want map[uint64]uint8
		err  string
	}{
		{"id,label\n3,1\n5,0\n", map[uint64]uint8{3: 1, 5: 0}, ""},
		{"3, 1\r\n\n18446744073709551615,0", map[uint64]uint8{3: 1, 18446744073709551615: 0}, ""},
		{"3,1\n4,2\n", nil, "line 2 column 3: label \"2\""},
		{"3,1\nx,0\n", nil, "line 2 column 1"},
		{"3;1\n", nil, "line 1"},
		{"3,1\n3,0\n", nil, "listed twice"},
		{"id,label\n", nil, "no labels"},
		{"-1,1\n", nil, "line 1 column 1"},
	} {
		got, err := ReadLabels(strings.NewReader(c.in), "f.csv")
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) || !strings.Contains(err.Error(), "f.csv") {
				t.Errorf("%q: error %v, want one containing %q and the file name", c.in, err, c.err)
			}
			continue
		}
		if err != nil || !maps.Equal(got, c.want) {
			t.Errorf("%q: %v, %v; want %v", c.in, got, err, c.want)
		}
	}
}

func FuzzReadLabels(f *testing.F) {
	f.Add("id,label\n1,0\n2,1\n")
	f.Add("7,1\r\n")
	f.Fuzz(func(t *testing.T, in string) {
		got, err := ReadLabels(strings.NewReader(in), "fuzz")
		if err != nil {
			return
		}
		for _, y := range got {
			if y > 1 {
				t.Fatalf("label %d from %q", y, in)
			}
		}
	})
}
