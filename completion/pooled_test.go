package completion

import (
	"errors"
	"testing"

	"github.com/splitguard/splitguard/data"
)

// TestSameRows: colluders' directories pool only when every one holds the
// first's training and test IDs in the same order.
func TestSameRows(t *testing.T) {
	type ids = []uint64
	split := func(train, test ids) *data.Split {
		return &data.Split{Train: &data.Dataset{IDs: train}, Test: &data.Dataset{IDs: test}}
	}
	base := split(ids{1, 2, 3}, ids{7, 8})
	for _, c := range []struct {
		name  string
		other *data.Split
		ok    bool
	}{
		{"same rows", split(ids{1, 2, 3}, ids{7, 8}), true},
		{"a training row fewer", split(ids{1, 2}, ids{7, 8}), false},
		{"training rows in another order", split(ids{2, 1, 3}, ids{7, 8}), false},
		{"another test row", split(ids{1, 2, 3}, ids{7, 9}), false},
	} {
		err := SameRows([]string{"a", "b"}, []*data.Split{base, c.other})
		if c.ok != (err == nil) || (!c.ok && !errors.Is(err, ErrRowsDiffer)) {
			t.Errorf("%s: %v", c.name, err)
		}
	}
}
