package psi

import "testing"

// chunks cuts b into elements of n bytes (the last one shorter), as a
// peer could send them.
func chunks(b []byte, n int) [][]byte {
	var out [][]byte
	for len(b) > 0 {
		k := min(n, len(b))
		out = append(out, b[:k])
		b = b[k:]
	}
	return out
}

// FuzzResponder feeds arbitrary round-1 and round-2 messages to a
// responder: each round is answered or refused, never a panic, and a
// refused round refuses every later one.
func FuzzResponder(f *testing.F) {
	in, err := NewInitiator(Uint64Keys([]uint64{1, 2, 3}), nil)
	if err != nil {
		f.Fatal(err)
	}
	r1, err := in.Round1()
	if err != nil {
		f.Fatal(err)
	}
	var blob []byte
	for _, e := range r1.Elements {
		blob = append(blob, e...)
	}
	f.Add(blob, blob, []byte{}, uint8(32))
	f.Add([]byte{1, 2, 3}, []byte{}, []byte{9}, uint8(3))
	f.Fuzz(func(t *testing.T, first, second, digest []byte, size uint8) {
		r, err := NewResponder(Uint64Keys([]uint64{2, 3, 4, 5}), nil)
		if err != nil {
			t.Fatal(err)
		}
		n := max(int(size), 1)
		if _, err := r.Handle(&Request{Round: 1, Elements: chunks(first, n)}); err != nil {
			if _, err2 := r.Handle(&Request{Round: 2, Elements: chunks(second, n), Digest: digest}); err2 == nil {
				t.Fatal("round 2 answered after round 1 was refused")
			}
			return
		}
		_, _ = r.Handle(&Request{Round: 2, Elements: chunks(second, n), Digest: digest})
	})
}

// FuzzInitiator feeds arbitrary responses to an initiator: each is used
// or refused, never a panic.
func FuzzInitiator(f *testing.F) {
	f.Add(make([]byte, 96), make([]byte, 128), []byte{}, uint8(32))
	f.Fuzz(func(t *testing.T, elements, own, digest []byte, size uint8) {
		in, err := NewInitiator(Uint64Keys([]uint64{1, 2, 3}), nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := in.Round1(); err != nil {
			t.Fatal(err)
		}
		n := max(int(size), 1)
		if _, err := in.Round2(&Response{Round: 1, Elements: chunks(elements, n), Own: chunks(own, n)}); err != nil {
			return
		}
		if err := in.Finish(&Response{Round: 2, Digest: digest}); err != nil {
			return
		}
		if _, err := in.Intersection(); err != nil {
			t.Fatalf("finished but no intersection: %v", err)
		}
	})
}
