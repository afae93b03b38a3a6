package audit

import "testing"

// FuzzUnmarshalBinary feeds arbitrary bytes to the auditor's checkpoint
// state reader: an error or a restored state, quickly (counts are bounded
// by the step given).
func FuzzUnmarshalBinary(f *testing.F) {
	a, err := New([]string{"norm"}, true, 9)
	if err != nil {
		f.Fatal(err)
	}
	if _, err := a.Observe(stateTestBatch(0)); err != nil {
		f.Fatal(err)
	}
	st, err := a.MarshalBinary()
	if err != nil {
		f.Fatal(err)
	}
	f.Add(st)
	f.Fuzz(func(t *testing.T, b []byte) {
		x, err := New([]string{"norm"}, true, 9)
		if err != nil {
			t.Fatal(err)
		}
		_ = x.UnmarshalBinaryAt(b, 1000)
	})
}
