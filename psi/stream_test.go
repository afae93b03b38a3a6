package psi

import (
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/gtank/ristretto255"
)

// plainIntersection is the intersection by a map: the reference.
func plainIntersection(x, y []uint64) []uint64 {
	in := map[uint64]bool{}
	for _, v := range y {
		in[v] = true
	}
	out := []uint64{}
	for _, v := range x {
		if in[v] {
			out = append(out, v)
		}
	}
	slices.Sort(out)
	return out
}

func distinct(rng *rand.Rand, n int, max uint64) []uint64 {
	seen := map[uint64]bool{}
	out := make([]uint64, 0, n)
	for len(out) < n {
		v := rng.Uint64N(max)
		if !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	return out
}

func TestStreamMatchesPlain(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	tests := []struct {
		name             string
		nx, ny           int
		max              uint64
		chunk            int
		partitionBytes   int64
		wantMultiplePart bool
	}{
		{"empty both", 0, 0, 10, 4, 0, false},
		{"empty x", 0, 50, 100, 7, 0, false},
		{"empty y", 50, 0, 100, 7, 0, false},
		{"one each", 1, 1, 1, 1, 0, false},
		{"chunks not dividing", 300, 170, 400, 64, 0, false},
		{"many partitions", 2000, 1500, 3000, 256, 4096, true},
		{"disjoint", 200, 200, 1 << 62, 50, 2048, true},
		{"large ids", 500, 500, 1<<64 - 1, 100, 0, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			x := distinct(rng, tc.nx, tc.max)
			y := distinct(rng, tc.ny, tc.max)
			if tc.name == "large ids" {
				copy(y[:200], x[:200]) // a known overlap
				y = slices.Compact(slices.Sorted(slices.Values(y)))
			}
			dir := t.TempDir()
			opt := StreamOptions{Chunk: tc.chunk, PartitionBytes: tc.partitionBytes, Dir: dir}
			r, err := NewStreamResponder(y, opt)
			if err != nil {
				t.Fatal(err)
			}
			var sawParts int
			got, err := RunStreamUint64(x, opt, func(req *Request) (*Response, error) {
				if req.Round == RoundStreamFinish && r.p.spill != nil {
					sawParts = len(r.p.spill.files)
				}
				if len(req.Elements) > tc.chunk {
					t.Errorf("a message of %d elements, chunk %d", len(req.Elements), tc.chunk)
				}
				return r.Handle(req)
			})
			if err != nil {
				t.Fatal(err)
			}
			want := plainIntersection(x, y)
			if !slices.Equal(got, want) {
				t.Errorf("initiator: %d common, want %d", len(got), len(want))
			}
			rgot, err := r.Intersection()
			if err != nil || !slices.Equal(rgot, want) {
				t.Errorf("responder: %d common (%v), want %d", len(rgot), err, len(want))
			}
			if tc.wantMultiplePart && sawParts < 2 {
				t.Errorf("%d partitions, want several", sawParts)
			}
			if left, _ := os.ReadDir(dir); len(left) != 0 {
				t.Errorf("spill files left: %v", left)
			}
		})
	}
}

func TestStreamDuplicatesAndTampering(t *testing.T) {
	t.Run("duplicate id in one chunk", func(t *testing.T) {
		r, _ := NewStreamResponder([]uint64{1, 2, 3}, StreamOptions{})
		_, err := RunStreamUint64([]uint64{5, 2, 5}, StreamOptions{}, r.Handle)
		if err == nil || !strings.Contains(err.Error(), "did not deduplicate") {
			t.Errorf("error %v", err)
		}
	})
	t.Run("duplicate id across chunks", func(t *testing.T) {
		r, _ := NewStreamResponder([]uint64{1, 2, 3}, StreamOptions{Chunk: 1})
		_, err := RunStreamUint64([]uint64{5, 2, 5}, StreamOptions{Chunk: 1}, r.Handle)
		if err == nil || !strings.Contains(err.Error(), "ID 5 is given twice") {
			t.Errorf("error %v", err)
		}
	})
	t.Run("tampered answer", func(t *testing.T) {
		r, _ := NewStreamResponder([]uint64{1, 2, 3, 4}, StreamOptions{})
		_, err := RunStreamUint64([]uint64{2, 3}, StreamOptions{}, func(req *Request) (*Response, error) {
			resp, err := r.Handle(req)
			if err == nil && req.Round == RoundStreamX {
				// One answer replaced by another valid element (the base
				// point): the initiator misses a common ID the responder has.
				resp.Elements[0] = ristretto255.NewElement().Base().Encode(nil)
			}
			return resp, err
		})
		if err == nil || !strings.Contains(err.Error(), "digest differs") {
			t.Errorf("error %v", err)
		}
	})
	t.Run("out of order", func(t *testing.T) {
		r, _ := NewStreamResponder([]uint64{1}, StreamOptions{})
		if _, err := r.Handle(&Request{Round: RoundStreamX}); err == nil || !strings.Contains(err.Error(), "unexpected round 11") {
			t.Errorf("error %v", err)
		}
		if _, err := r.Handle(&Request{Round: RoundStreamHello, Digest: make([]byte, 8)}); err == nil || !strings.Contains(err.Error(), "earlier request failed") {
			t.Errorf("error after failure %v", err)
		}
	})
	t.Run("oversized set", func(t *testing.T) {
		r, _ := NewStreamResponder([]uint64{1}, StreamOptions{})
		r.Handle(&Request{Round: RoundStreamHello, Digest: []byte{0, 0, 0, 0, 0, 0, 0, 1}})
		x, _ := NewStreamResponder([]uint64{7, 8}, StreamOptions{}) // a source of two blinded elements
		x.p.openSpill(0)
		out := [][]byte{nil, nil}
		x.p.blindChunk(0, 2, out, make([]uint64, 2))
		x.p.close()
		if _, err := r.Handle(&Request{Round: RoundStreamX, Elements: out}); err == nil || !strings.Contains(err.Error(), "more than the 1 elements") {
			t.Errorf("error %v", err)
		}
	})
}

// TestFeistel: a permutation of [0, n) for sizes around powers of two.
func TestFeistel(t *testing.T) {
	for _, n := range []uint64{1, 2, 3, 4, 5, 15, 16, 17, 255, 256, 1000} {
		f := newFeistel(n, [32]byte{byte(n)})
		seen := make([]bool, n)
		moved := 0
		for i := uint64(0); i < n; i++ {
			j := f.apply(i)
			if j >= n || seen[j] {
				t.Fatalf("n=%d: %d → %d (out of range or hit twice)", n, i, j)
			}
			seen[j] = true
			if j != i {
				moved++
			}
		}
		if n >= 16 && moved < int(n)/2 {
			t.Errorf("n=%d: only %d of %d indices moved", n, moved, n)
		}
	}
}

// BenchmarkPSIStream20000 and BenchmarkPSIStream100000 are
// BenchmarkPSI20000 with the streamed protocol (chunks of 2048, partitions
// of 64 KiB): run them under /usr/bin/time -v to see that peak memory does
// not grow with the ID count.
func BenchmarkPSIStream20000(b *testing.B)  { benchStream(b, 20000) }
func BenchmarkPSIStream100000(b *testing.B) { benchStream(b, 100000) }

func benchStream(b *testing.B, n int) {
	if testing.Short() {
		b.Skip("long benchmark")
	}
	x := make([]uint64, n)
	y := make([]uint64, n)
	for i := range x {
		x[i], y[i] = uint64(i), uint64(i+n/2)
	}
	opt := StreamOptions{Chunk: 2048, PartitionBytes: 64 << 10}
	for b.Loop() {
		r, _ := NewStreamResponder(y, opt)
		got, err := RunStreamUint64(x, opt, r.Handle)
		if err != nil || len(got) != n/2 {
			b.Fatal(len(got), err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/float64(2*n), "µs/ID")
}

// FuzzStreamResponder feeds the responder arbitrary requests (as a
// malicious or broken initiator would): it must answer or refuse, never
// panic, and never accept more elements than announced.
func FuzzStreamResponder(f *testing.F) {
	base := ristretto255.NewElement().Base().Encode(nil)
	f.Add(byte(RoundStreamHello), []byte{0, 0, 0, 0, 0, 0, 0, 1}, byte(RoundStreamX), base)
	f.Add(byte(RoundStreamHello), []byte{0, 0, 0, 0, 0, 0, 0, 0}, byte(RoundStreamY), []byte{})
	f.Add(byte(RoundStreamX), []byte{1}, byte(RoundStreamFinish), make([]byte, 32))
	f.Fuzz(func(t *testing.T, r1 byte, d1 []byte, r2 byte, e2 []byte) {
		r, err := NewStreamResponder([]uint64{1, 2, 3}, StreamOptions{Chunk: 2, Dir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		r.Handle(&Request{Round: int(r1), Digest: d1})
		resp, err := r.Handle(&Request{Round: int(r2), Elements: [][]byte{e2}, Digest: e2})
		if err == nil && r2 == RoundStreamX && len(resp.Elements) != 1 {
			t.Fatalf("answered %d elements for 1", len(resp.Elements))
		}
	})
}
