package configkey

import (
	"reflect"
	"testing"
)

// TestWarningLogArgs: a warning's log attributes are one key=NAME pair
// per key, in order; none for a warning without keys.
func TestWarningLogArgs(t *testing.T) {
	for _, tc := range []struct {
		w    Warning
		want []any
	}{
		{Warn("batch 9 (key batch) exceeds 4 rows", "batch"), []any{"key", "batch"}},
		{Warn("key checkpoint_every and key eval_every", "checkpoint_every", "eval_every"), []any{"key", "checkpoint_every", "key", "eval_every"}},
		{Warn("no key"), []any{}},
	} {
		if got := tc.w.LogArgs(); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%q: %v, want %v", tc.w, got, tc.want)
		}
		if tc.w.String() != tc.w.Text {
			t.Errorf("String %q, want %q", tc.w.String(), tc.w.Text)
		}
	}
}
