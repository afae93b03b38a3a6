package data

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// TestReserveKeepsRowsAndSizesSlices: a table read from a file of known
// size (its slices sized once from the first rows) loads exactly as the
// same table from a reader of unknown size, for tables with and without
// labels, and the sizing left little slack and saved the copies.
func TestReserveKeepsRowsAndSizesSlices(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteSynth(&buf, 3*reserveAfter, 0.25, 7); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "synth.tsv")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, o := range []Options{{Format: FormatCriteo}, {Format: FormatCriteo, NoLabel: true}, {Format: FormatCriteo, TestFrac: 0.3, Sample: 0.5}} {
		fromFile, err := Load(path, o)
		if err != nil {
			t.Fatal(err)
		}
		fromReader, err := LoadReader(bytes.NewReader(buf.Bytes()), path, o)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(fromFile, fromReader) {
			t.Fatalf("options %+v: the table loads differently from a file of known size", o)
		}
		checkSizedOnce(t, o, fromFile)
	}
}

// TestGenerateSizesSlicesOnce: a generated table (its row count known)
// loads exactly as the text WriteSynth writes for it, read from a pipe
// of unknown size, and its slices were sized once, with little slack.
func TestGenerateSizesSlicesOnce(t *testing.T) {
	const rows = 3 * reserveAfter
	var buf bytes.Buffer
	if err := WriteSynth(&buf, rows, 0.25, 7); err != nil {
		t.Fatal(err)
	}
	for _, o := range []Options{{Format: FormatCriteo}, {Format: FormatCriteo, TestFrac: 0.3, Sample: 0.5}} {
		got, err := Generate(rows, 0.25, 7, o)
		if err != nil {
			t.Fatal(err)
		}
		// A reader that is not a ReadSeeker: the loader cannot know its size.
		want, err := LoadReader(struct{ io.Reader }{bytes.NewReader(buf.Bytes())}, fmt.Sprintf("synth(rows=%d, pos=%g, seed=%d)", rows, 0.25, 7), o)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("options %+v: the generated table loads differently from its text", o)
		}
		checkSizedOnce(t, o, got)
	}
}

// checkSizedOnce fails t when a split's categorical block has much more
// room than it holds (its slice grew by appends instead of being sized).
func checkSizedOnce(t *testing.T, o Options, s *Split) {
	t.Helper()
	for _, d := range []*Dataset{s.Train, s.Test} {
		n, c := len(d.X.Cat), cap(d.X.Cat)
		if c < n || float64(c) > 1.15*float64(n)+float64(16*d.X.NumCat) {
			t.Errorf("options %+v: %d categorical values in a slice of capacity %d: the sizing is off", o, n, c)
		}
	}
}
