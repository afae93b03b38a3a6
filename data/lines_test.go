package data

import (
	"io"
	"math"
	"strings"
	"testing"
)

func TestSplitFields(t *testing.T) {
	cases := []struct {
		line  string
		delim byte
		want  []string
		bad   bool
	}{
		{"a,b,c", ',', []string{"a", "b", "c"}, false},
		{",,", ',', []string{"", "", ""}, false},
		{"", ',', []string{""}, false},
		{"1\t\tx", '\t', []string{"1", "", "x"}, false},
		{`"a,b",c`, ',', []string{"a,b", "c"}, false},
		{`"say ""hi""",,"x"`, ',', []string{`say "hi"`, "", "x"}, false},
		{`"",b`, ',', []string{"", "b"}, false},
		{`"open,b`, ',', nil, true},
		{`"a"b,c`, ',', nil, true},
		{`a"b,c`, ',', nil, true},
	}
	var dst [][]byte
	var scratch []byte
	for _, c := range cases {
		got, err := splitFields([]byte(c.line), c.delim, dst, &scratch)
		if c.bad {
			if err == nil {
				t.Errorf("splitFields(%q): no error", c.line)
			}
			continue
		}
		if err != nil {
			t.Errorf("splitFields(%q): %v", c.line, err)
			continue
		}
		if len(got) != len(c.want) {
			t.Errorf("splitFields(%q) = %q, want %q", c.line, got, c.want)
			continue
		}
		for i := range got {
			if string(got[i]) != c.want[i] {
				t.Errorf("splitFields(%q)[%d] = %q, want %q", c.line, i, got[i], c.want[i])
			}
		}
		dst = got
	}
}

func TestParseNumber(t *testing.T) {
	cases := []struct {
		in   string
		want float64
		ok   bool
	}{
		{"0", 0, true}, {"17", 17, true}, {"-2", -2, true}, {"+5", 5, true},
		{"260.0", 260, true}, {"1e3", 1000, true}, {"-0.25", -0.25, true},
		{"123456789012345678", 123456789012345678, true},
		{"12345678901234567890", 1.2345678901234567e19, true},
		{"", 0, false}, {"-", 0, false}, {"abc", 0, false}, {"1x", 0, false},
		{"NaN", 0, false}, {"inf", 0, false}, {"1e999", 0, false},
	}
	for _, c := range cases {
		got, ok := parseNumber([]byte(c.in))
		if ok != c.ok || (ok && got != c.want) {
			t.Errorf("parseNumber(%q) = %v, %v; want %v, %v", c.in, got, ok, c.want, c.ok)
		}
	}
}

func TestParseUint64(t *testing.T) {
	cases := []struct {
		in   string
		want uint64
		ok   bool
	}{
		{"0", 0, true}, {"10000169349117863715", 10000169349117863715, true},
		{"18446744073709551615", math.MaxUint64, true},
		{"18446744073709551616", 0, false}, {"99999999999999999999", 0, false},
		{"-1", 0, false}, {"", 0, false}, {"12a", 0, false}, {"123456789012345678901", 0, false},
	}
	for _, c := range cases {
		got, ok := parseUint64([]byte(c.in))
		if ok != c.ok || got != c.want {
			t.Errorf("parseUint64(%q) = %v, %v; want %v, %v", c.in, got, ok, c.want, c.ok)
		}
	}
}

func TestHotPathAllocations(t *testing.T) {
	line := []byte("1\t2\t\t3.5\tabc\tdef")
	var dst [][]byte
	var scratch []byte
	dst, _ = splitFields(line, '\t', dst, &scratch)
	if n := testing.AllocsPerRun(100, func() { dst, _ = splitFields(line, '\t', dst, &scratch) }); n != 0 {
		t.Errorf("splitFields allocates %v times per line", n)
	}
	for _, s := range []string{"12345", "260.0", "-1"} {
		b := []byte(s)
		if n := testing.AllocsPerRun(100, func() { parseNumber(b) }); n != 0 {
			t.Errorf("parseNumber(%q) allocates %v times", s, n)
		}
	}
}

func TestLineReader(t *testing.T) {
	// The longest record allowed; with its line ending it overflows the
	// reader's buffer.
	long := strings.Repeat("x", MaxRecordBytes)
	lr := newLineReader(strings.NewReader("a\r\nb\n\n" + long + "\nlast"))
	want := []string{"a", "b", "", long, "last"}
	for i, w := range want {
		got, err := lr.next()
		if err != nil || string(got) != w || lr.line != int64(i+1) {
			t.Fatalf("line %d: got %d bytes, err %v, line number %d", i+1, len(got), err, lr.line)
		}
	}
	if _, err := lr.next(); err != io.EOF {
		t.Fatalf("after the last line: %v, want EOF", err)
	}
}
