package protect

import (
	"bytes"
	"testing"
)

// FuzzInputLayerState feeds arbitrary bytes to the input layers' Load
// (a checkpoint or top.model is outside input): it must fail cleanly or
// restore a state that saves back to the same bytes.
func FuzzInputLayerState(f *testing.F) {
	mid, _ := NewMID(3, 2, 0.1, 1e-3, 1)
	mix, _ := NewMixup(1, 1)
	pass, _ := NewPassport(3, 2, 1, 1e-3, 1, 0)
	for _, l := range []InputLayer{mid, mix, pass} {
		var b bytes.Buffer
		if err := l.Save(&b); err != nil {
			f.Fatal(err)
		}
		f.Add(b.Bytes())
	}
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, mk := range []func() InputLayer{
			func() InputLayer { m, _ := NewMID(3, 2, 0.1, 1e-3, 1); return m },
			func() InputLayer { m, _ := NewMixup(1, 1); return m },
			func() InputLayer { m, _ := NewPassport(3, 2, 1, 1e-3, 1, 0); return m },
		} {
			l := mk()
			if err := l.Load(bytes.NewReader(data)); err != nil {
				continue
			}
			var b bytes.Buffer
			if err := l.Save(&b); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(b.Bytes(), data) {
				t.Fatalf("%s: state loaded from %d bytes saves back as %d different bytes", l.Name(), len(data), b.Len())
			}
		}
	})
}
