package main

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestTunedFlags: the tuned attacker's settings are refused by their flags'
// names, before any data is read.
func TestTunedFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--tuned-known", "1"}, "(--tuned-known)"},
		{[]string{"--tuned-known", "65"}, "(--tuned-known)"},
		{[]string{"--tuned-budget", "3"}, "(--tuned-budget needs --tuned-known)"},
	} {
		args := append([]string{"train", "--data", filepath.Join(t.TempDir(), "never-read.csv"), "--out", t.TempDir()}, c.args...)
		err := runBounded(t, args, time.Minute)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want one containing %q", c.args, err, c.want)
		}
	}
}
