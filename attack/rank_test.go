package attack

import (
	"math"
	"slices"
	"testing"
)

func TestRank(t *testing.T) {
	for _, c := range []struct {
		name string
		want int
	}{
		{"norm", 1}, {"cosine", math.MaxInt}, {"completion", math.MaxInt},
		{"norm" + TunedSuffix, math.MaxInt}, {"no_such_attack", math.MaxInt},
	} {
		if got := Rank(c.name); got != c.want {
			t.Errorf("Rank(%q) = %d, want %d", c.name, got, c.want)
		}
	}
	for _, c := range []struct{ in, want []string }{
		{[]string{"spectral", "cosine", "norm"}, []string{"norm", "cosine", "spectral"}},
		{[]string{"norm_tuned", "norm", "completion_supervised", "completion"}, []string{"norm", "completion", "completion_supervised", "norm_tuned"}},
		{nil, nil},
	} {
		got := slices.Clone(c.in)
		SortByRank(got)
		if !slices.Equal(got, c.want) {
			t.Errorf("SortByRank(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
