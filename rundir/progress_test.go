package rundir

import (
	"math"
	"testing"

	"github.com/splitguard/splitguard/attack"
)

func TestHeadlineKey(t *testing.T) {
	toyRank := func(a string) int {
		switch a {
		case "b":
			return 2
		case "c":
			return 1
		}
		return math.MaxInt
	}
	for _, c := range []struct {
		name string
		keys []string
		rank func(string) int
		want string
	}{
		{"none", nil, attack.Rank, ""},
		{"norm at the cut", []string{"spectral/cut", "norm/first", "norm/cut", "cosine/cut"}, attack.Rank, "norm/cut"},
		{"no norm at the cut", []string{"spectral/cut", "norm/first", "cosine/cut"}, attack.Rank, "cosine/cut"},
		{"tuned is not ranked", []string{"norm_tuned/cut", "spectral/cut"}, attack.Rank, "norm_tuned/cut"},
		{"best rank wins", []string{"a/cut", "b/cut", "c/cut", "c/first"}, toyRank, "c/cut"},
		{"ranked but not at the cut", []string{"a/cut", "c/first"}, toyRank, "a/cut"},
	} {
		if got := headlineKey(c.keys, c.rank); got != c.want {
			t.Errorf("%s: headlineKey(%q) = %q, want %q", c.name, c.keys, got, c.want)
		}
	}
}
