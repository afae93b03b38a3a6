package schedule

import (
	"slices"
	"testing"
)

func TestOrderIsAPermutationThatChangesPerEpoch(t *testing.T) {
	s, err := New(1000, 64, 7)
	if err != nil {
		t.Fatal(err)
	}
	o0 := slices.Clone(s.Order(0, nil))
	o1 := s.Order(1, nil)
	if slices.Equal(o0, o1) {
		t.Fatal("epochs 0 and 1 have the same order")
	}
	seen := make([]bool, 1000)
	for _, i := range o0 {
		if seen[i] {
			t.Fatalf("row %d twice", i)
		}
		seen[i] = true
	}
	again, _ := New(1000, 64, 7)
	if !slices.Equal(o0, again.Order(0, nil)) {
		t.Fatal("same seed, different order")
	}
}

func TestBatchesCoverEveryRowOnce(t *testing.T) {
	for _, tc := range []struct{ n, batch, batches, last int }{
		{10, 3, 4, 1}, {9, 3, 3, 3}, {1, 5, 1, 1}, {1024, 1024, 1, 1024},
	} {
		s, _ := New(tc.n, tc.batch, 1)
		if got := s.BatchesPerEpoch(); got != tc.batches {
			t.Fatalf("%+v: %d batches", tc, got)
		}
		order := s.Order(0, nil)
		total := 0
		for b := range s.BatchesPerEpoch() {
			total += len(s.Rows(order, b))
		}
		if total != tc.n || len(s.Rows(order, tc.batches-1)) != tc.last {
			t.Fatalf("%+v: covered %d rows, last batch %d", tc, total, len(s.Rows(order, tc.batches-1)))
		}
	}
	if _, err := New(0, 3, 1); err == nil {
		t.Fatal("no error for an empty schedule")
	}
	if _, err := New(3, 0, 1); err == nil {
		t.Fatal("no error for batch 0")
	}
}

func TestPosition(t *testing.T) {
	s, _ := New(10, 3, 1) // 4 batches per epoch
	for _, tc := range []struct {
		step         int64
		epoch, batch int
	}{{0, 0, 0}, {3, 0, 3}, {4, 1, 0}, {9, 2, 1}} {
		if e, b := s.Position(tc.step); e != tc.epoch || b != tc.batch {
			t.Fatalf("Position(%d) = %d,%d want %d,%d", tc.step, e, b, tc.epoch, tc.batch)
		}
	}
}
