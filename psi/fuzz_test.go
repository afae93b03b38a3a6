package psi

import (
	"context"
	"testing"
	"time"

	"github.com/gtank/ristretto255"
)

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

// FuzzHub feeds one passive's slot of a hub arbitrary requests (a
// malicious or broken passive): each is answered or refused, never a
// panic, never more elements back than allowed, and a refusal fails the
// hub for every passive.
func FuzzHub(f *testing.F) {
	base := ristretto255.NewElement().Base().Encode(nil)
	f.Add(byte(RoundStreamHello), []byte{0, 0, 0, 0, 0, 0, 0, 1}, byte(RoundHubX), base)
	f.Add(byte(RoundStreamHello), []byte{0, 0, 0, 0, 0, 0, 0, 0}, byte(RoundHubY), []byte{})
	f.Add(byte(RoundStreamHello), []byte{0, 0, 0, 0, 0, 0, 0, 0}, byte(RoundHubResult), []byte{})
	f.Add(byte(RoundHubResult), []byte{1}, byte(RoundHubWait), make([]byte, 32))
	f.Fuzz(func(t *testing.T, r1 byte, d1 []byte, r2 byte, e2 []byte) {
		hub, err := NewHub([]uint64{1, 2, 3}, 2, StreamOptions{Chunk: 2, Dir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		defer hub.Close()
		hub.Poll = time.Millisecond
		ctx := context.Background()
		_, err1 := hub.Handle(ctx, 0, &Request{Round: int(r1), Digest: d1})
		resp, err2 := hub.Handle(ctx, 0, &Request{Round: int(r2), Elements: [][]byte{e2}, Digest: e2})
		if err2 == nil && (len(resp.Elements) > 2 || len(resp.Own) > 2 || (r2 == RoundHubX && len(resp.Elements) != 0)) {
			t.Fatalf("round %d answered %d elements and %d own", r2, len(resp.Elements), len(resp.Own))
		}
		if err1 != nil || err2 != nil {
			if _, err := hub.Handle(ctx, 1, &Request{Round: RoundStreamHello, Digest: make([]byte, 8)}); err == nil {
				t.Fatal("the other passive was answered after a refusal")
			}
		}
	})
}
