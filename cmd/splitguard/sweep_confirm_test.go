package main

import (
	"strings"
	"testing"
)

// TestConfirmSweep: a sweep above sweep.ConfirmRuns runs needs --yes; the
// refusal names the count and the estimate (531441 runs / 4 jobs / 60 =
// 2214.3 hours).
func TestConfirmSweep(t *testing.T) {
	if err := confirmSweep(1000, 4, false); err != nil {
		t.Fatal(err)
	}
	err := confirmSweep(531441, 4, false)
	if err == nil || !strings.Contains(err.Error(), "531441 runs, about 2214 hours with --jobs 4") || !strings.Contains(err.Error(), "--yes") {
		t.Fatalf("got %v", err)
	}
	if err := confirmSweep(531441, 4, true); err != nil {
		t.Fatal(err)
	}
}
