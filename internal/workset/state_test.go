package workset

import (
	"bytes"
	"testing"
)

// TestTableStateRoundTrip: a table restored from a saved position draws
// the same slots as the table it was saved from, and states that cannot
// come from a run, or from a table of another size, are refused.
func TestTableStateRoundTrip(t *testing.T) {
	a, _ := New(3)
	for range 4 {
		a.Add()
		a.Pick()
		a.Pick()
	}
	b, _ := New(3)
	rest, err := b.TakeState(a.AppendState(nil))
	if err != nil || len(rest) != 0 {
		t.Fatalf("TakeState: %v, %d bytes left", err, len(rest))
	}
	for i := range 7 {
		if i%3 == 0 {
			if sa, sb := a.Add(), b.Add(); sa != sb {
				t.Fatalf("add %d: slot %d, the original %d", i, sb, sa)
			}
		}
		if sa, sb := a.Pick(), b.Pick(); sa != sb {
			t.Fatalf("pick %d: slot %d, the original %d", i, sb, sa)
		}
	}
	other, _ := New(2)
	if _, err := other.TakeState(a.AppendState(nil)); err == nil {
		t.Error("a 3-slot state loaded into a 2-slot table")
	}
	empty, _ := New(3)
	bad := empty.AppendState(nil)
	bad[16] = 1 // a local update drawn from an empty table
	if _, err := empty.TakeState(bad); err == nil {
		t.Error("an empty table with a local update drawn was accepted")
	}
	if _, err := empty.TakeState(bad[:10]); err == nil {
		t.Error("a truncated state was accepted")
	}
}

// TestValuesRoundTrip checks the value sections byte for byte and that a
// length overrunning the buffer is refused.
func TestValuesRoundTrip(t *testing.T) {
	b := AppendInts(nil, []int{3, -1, 7})
	b = AppendFloats(b, []float32{1.5, -0.25})
	ints, rest, err := TakeInts(b, nil)
	if err != nil || len(ints) != 3 || ints[0] != 3 || ints[1] != -1 || ints[2] != 7 {
		t.Fatalf("ints %v, %v", ints, err)
	}
	fl, rest, err := TakeFloats(rest, nil)
	if err != nil || len(fl) != 2 || fl[0] != 1.5 || fl[1] != -0.25 || len(rest) != 0 {
		t.Fatalf("floats %v, %v, %d left", fl, err, len(rest))
	}
	over := AppendFloats(nil, []float32{1, 2})
	over[0] = 9
	if _, _, err := TakeFloats(over, nil); err == nil {
		t.Error("a length overrunning the buffer was accepted")
	}
	if !bytes.Equal(AppendInts(nil, nil), make([]byte, 8)) {
		t.Error("an empty section is not its zero length alone")
	}
}
