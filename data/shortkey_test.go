package data

import (
	"slices"
	"strings"
	"testing"
)

// TestVocabularyShortAndLongValues: values of up to 8 bytes (kept under
// integer keys) and longer ones (under their text) share one vocabulary
// in byte order of their text: values that differ only by trailing NUL
// bytes, the empty value (NA), values of 7, 8 and 9 bytes. The ids are
// derived by hand from the sorted distinct values.
func TestVocabularyShortAndLongValues(t *testing.T) {
	values := []string{"abcdefgh", "a", "a\x00", "", "abcdefghi", "abcdefg", "a\x00", "zz", "abcdefgh", "\x00"}
	var b strings.Builder
	b.WriteString("y,c\n")
	for i, v := range values {
		b.WriteString([]string{"0", "1"}[i%2] + "," + strings.ReplaceAll(v, ",", "") + "\n")
	}
	p := writeFile(t, "short.csv", b.String())
	s, err := Load(p, Options{Format: FormatCSV, LabelCol: "y", Categorical: []string{"c"}, TestFrac: -1})
	if err != nil {
		t.Fatal(err)
	}
	sorted := slices.Clone(values)
	slices.Sort(sorted)
	sorted = slices.Compact(sorted)
	want := make([]int32, len(values))
	for i, v := range values {
		want[i] = int32(slices.Index(sorted, v) + 1)
	}
	if got := s.Train.X.Cat; !slices.Equal(got, want) {
		t.Fatalf("ids %v, want %v (vocabulary %q)", got, want, sorted)
	}
	for n := range 9 {
		k := strings.Repeat("\xff", n)
		if got := shortText(shortKey([]byte(k)), n); got != k {
			t.Errorf("shortText(shortKey(%q)) = %q", k, got)
		}
	}
}
