package workset

import (
	"math"
	"testing"
)

// TestPickRoundRobin checks the slots drawn against a schedule written out
// by hand for W = 2, Q = 3 (two local updates per exchange).
func TestPickRoundRobin(t *testing.T) {
	tab, err := New(2)
	if err != nil {
		t.Fatal(err)
	}
	// Exchange 0 fills slot 0; updates 0, 1 → slots 0, 0 (one filled).
	// Exchange 1 fills slot 1; updates 2, 3 → slots 0, 1.
	// Exchange 2 evicts batch 0 from slot 0; updates 4, 5 → slots 0, 1.
	wantAdd := []int{0, 1, 0}
	want := [][]int{{0, 0}, {0, 1}, {0, 1}}
	for e := range want {
		if s := tab.Add(); s != wantAdd[e] {
			t.Fatalf("exchange %d: added to slot %d, want %d", e, s, wantAdd[e])
		}
		for q, w := range want[e] {
			if s := tab.Pick(); s != w {
				t.Fatalf("exchange %d, update %d: slot %d, want %d", e, q, s, w)
			}
		}
	}
	if _, err := New(0); err == nil {
		t.Fatal("New(0) accepted")
	}
}

// TestWeights checks the instance weights against cosines computed by
// hand.
func TestWeights(t *testing.T) {
	stale := []float32{1, 0, 3, 4, 1, 1, 0, 0, 0, 0, 2, 0}
	fresh := []float32{0, 1, 4, 3, -1, -1, 0, 0, 1, 0, 2, 0}
	// Rows: orthogonal 0; 24/25 = 0.96; opposite −1; both zero 1; zero
	// against non-zero 0; equal 1.
	cos := []float64{0, 0.96, -1, 1, 0, 1}
	for _, tc := range []struct {
		xi   float64
		kept int
	}{{-1, 6}, {0, 5}, {0.5, 3}, {0.97, 2}} {
		out := make([]float32, 6)
		kept, err := Weights(stale, fresh, 2, tc.xi, out)
		if err != nil {
			t.Fatal(err)
		}
		if kept != tc.kept {
			t.Errorf("ξ=%g: kept %d, want %d", tc.xi, kept, tc.kept)
		}
		for i, c := range cos {
			want := c
			if c < tc.xi {
				want = 0
			}
			if math.Abs(float64(out[i])-want) > 1e-6 {
				t.Errorf("ξ=%g row %d: weight %g, want %g", tc.xi, i, out[i], want)
			}
		}
	}
	if _, err := Weights(stale, fresh[:10], 2, 0, make([]float32, 6)); err == nil {
		t.Error("rows of different sizes accepted")
	}
}
