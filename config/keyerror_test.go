package config

import (
	"errors"
	"fmt"
	"slices"
	"testing"
)

// TestKeysOf: the keys of KeyErrors wrapped, nested and joined, each
// once, and none of an error without one.
func TestKeysOf(t *testing.T) {
	base := errors.New("a backdoor (key backdoor) and a free-riding mode (key free_ride) at once")
	for _, tc := range []struct {
		name string
		err  error
		want []string
	}{
		{"none", fmt.Errorf("x: %w", base), nil},
		{"one", Keyed(base, "backdoor"), []string{"backdoor"}},
		{"two levels deep", fmt.Errorf("run: %w", fmt.Errorf("config: %w", Keyed(base, "backdoor", "free_ride"))), []string{"backdoor", "free_ride"}},
		{"joined", errors.Join(Keyed(base, "out"), errors.New("y"), fmt.Errorf("z: %w", Keyed(base, "batch", "out"))), []string{"out", "batch"}},
		{"nil", nil, nil},
	} {
		if got := KeysOf(tc.err); !slices.Equal(got, tc.want) {
			t.Errorf("%s: KeysOf = %v, want %v", tc.name, got, tc.want)
		}
	}
	if Keyed(nil, "x") != nil || Keyed(base) != base {
		t.Error("Keyed of nil or of no key changed the error")
	}
	if got := Keyed(base, "a", "b").Error(); got != base.Error() {
		t.Errorf("Keyed changed the text: %q", got)
	}
}

// TestValidateRefusesKeys: a configuration's refusals are KeyErrors
// naming the keys their text names, beside a problem of no key, and the
// text is the joined problems as before.
func TestValidateRefusesKeys(t *testing.T) {
	c := Default()
	c.SynthRows = 100
	c.Out = ""
	c.Backdoor = "nope-backdoor"
	err := c.Validate()
	if err == nil {
		t.Fatal("no error")
	}
	keys := KeysOf(err)
	for _, k := range []string{"out", "backdoor"} {
		if !slices.Contains(keys, k) {
			t.Errorf("keys %v lack %s (error %q)", keys, k, err)
		}
	}
	var ke *KeyError
	if !errors.As(err, &ke) {
		t.Errorf("errors.As finds no KeyError in %q", err)
	}
	if want := "config: no output directory (key out); "; len(err.Error()) < len(want) || err.Error()[:len(want)] != want {
		t.Errorf("text %q, want it to begin %q", err, want)
	}
}
