package psi

import (
	"bytes"
	"crypto/sha512"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gtank/ristretto255"
)

// run executes the protocol between fresh parties and returns both
// results and every message exchanged.
func run(t *testing.T, x, y [][]byte) (ri, rr [][]byte, reqs []*Request, resps []*Response) {
	t.Helper()
	resp, err := NewResponder(y, nil)
	if err != nil {
		t.Fatal(err)
	}
	ri, err = Run(x, nil, func(q *Request) (*Response, error) {
		reqs = append(reqs, q)
		a, err := resp.Handle(q)
		if err == nil {
			resps = append(resps, a)
		}
		return a, err
	})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	select {
	case <-resp.Done():
	default:
		t.Fatal("responder not done after Run returned")
	}
	rr, err = resp.Intersection()
	if err != nil {
		t.Fatal(err)
	}
	return ri, rr, reqs, resps
}

// bruteIntersect is the reference: a nested loop over the raw uint64 IDs.
func bruteIntersect(x, y []uint64) []uint64 {
	out := []uint64{}
	for _, a := range x {
		if slices.Contains(y, a) && !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	slices.Sort(out)
	return out
}

func TestIntersectionUint64(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	randSet := func(n int, lo, hi uint64) []uint64 {
		s := make([]uint64, n)
		for i := range s {
			s[i] = lo + r.Uint64N(hi-lo)
		}
		return s
	}
	tests := []struct {
		name string
		x, y []uint64
		want []uint64 // nil: brute force
	}{
		{name: "overlapping random", x: randSet(150, 0, 400), y: randSet(120, 0, 400)},
		{name: "overlapping large IDs", x: randSet(60, 1<<63, 1<<63+100), y: randSet(70, 1<<63, 1<<63+100)},
		{name: "disjoint", x: []uint64{1, 2, 3, 4}, y: []uint64{5, 6, 7}, want: []uint64{}},
		{name: "initiator empty", x: nil, y: []uint64{5, 6, 7}, want: []uint64{}},
		{name: "responder empty", x: []uint64{5, 6, 7}, y: []uint64{}, want: []uint64{}},
		{name: "both empty", want: []uint64{}},
		{name: "duplicates are removed", x: []uint64{9, 9, 9, 3, 3, 1}, y: []uint64{3, 9, 9, 10}, want: []uint64{3, 9}},
		{name: "identical", x: []uint64{42, 7, 0, ^uint64(0)}, y: []uint64{^uint64(0), 0, 7, 42}, want: []uint64{0, 7, 42, ^uint64(0)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			want := tc.want
			if want == nil {
				want = bruteIntersect(tc.x, tc.y)
				if len(want) == 0 {
					t.Fatal("test sets do not overlap")
				}
			}
			ri, rr, _, _ := run(t, Uint64Keys(tc.x), Uint64Keys(tc.y))
			gi, err := Uint64s(ri)
			if err != nil {
				t.Fatal(err)
			}
			gr, err := Uint64s(rr)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(gi, want) {
				t.Errorf("initiator got %v, want %v", gi, want)
			}
			if !slices.Equal(gr, want) {
				t.Errorf("responder got %v, want %v", gr, want)
			}
		})
	}
}

func TestIntersectionStrings(t *testing.T) {
	x := []string{"alice", "bob", "carol", "", "dave"}
	y := []string{"dave", "erin", "", "bob", "bob"}
	ri, rr, _, _ := run(t, StringKeys(x), StringKeys(y))
	want := [][]byte{[]byte(""), []byte("bob"), []byte("dave")}
	for name, got := range map[string][][]byte{"initiator": ri, "responder": rr} {
		if !slices.EqualFunc(got, want, bytes.Equal) {
			t.Errorf("%s got %q, want %q", name, got, want)
		}
	}
}

func TestRunUint64(t *testing.T) {
	resp, err := NewResponder(Uint64Keys([]uint64{5, 1, 3}), nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := RunUint64([]uint64{3, 4, 5}, nil, resp.Handle)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, []uint64{3, 5}) {
		t.Fatalf("got %v, want [3 5]", got)
	}
}

// TestMessagesHideIDs checks that no message contains a raw ID, its plain
// SHA-512 hash (with or without the prefix), or its unblinded group element.
func TestMessagesHideIDs(t *testing.T) {
	x := []uint64{10, 20, 30, 40}
	y := []uint64{30, 40, 50}
	_, _, reqs, resps := run(t, Uint64Keys(x), Uint64Keys(y))
	var forbidden [][]byte
	for _, id := range append(slices.Clone(x), y...) {
		k := Uint64Key(id)
		plain := sha512.Sum512(k)
		pref := sha512.Sum512(append([]byte(hashPrefix), k...))
		elem := ristretto255.NewElement().FromUniformBytes(pref[:]).Encode(nil)
		forbidden = append(forbidden, k, plain[:32], plain[32:], pref[:32], pref[32:], elem)
	}
	var blobs [][]byte
	for _, q := range reqs {
		blobs = append(blobs, q.Elements...)
		blobs = append(blobs, q.Digest)
	}
	for _, a := range resps {
		blobs = append(blobs, a.Elements...)
		blobs = append(blobs, a.Own...)
		blobs = append(blobs, a.Digest)
	}
	if len(blobs) < len(x)+2*len(y)+len(y) {
		t.Fatalf("only %d blobs captured", len(blobs))
	}
	for _, b := range blobs {
		for _, f := range forbidden {
			if bytes.Contains(b, f) {
				t.Fatalf("message blob %x contains %x", b, f)
			}
		}
	}
}

// TestShuffled checks that the blinded elements are not sent in the sorted
// order of the IDs: the Initiator re-blinds the Responder's shuffled list,
// and with 64 elements the chance that a shuffle is the identity is 1/64!.
func TestShuffled(t *testing.T) {
	ids := make([]uint64, 64)
	for i := range ids {
		ids[i] = uint64(i)
	}
	in, err := NewInitiator(Uint64Keys(ids), nil)
	if err != nil {
		t.Fatal(err)
	}
	req, err := in.Round1()
	if err != nil {
		t.Fatal(err)
	}
	inOrder := blindIDs(in.p.ids, in.p.permutationIdentity(), in.p.secret)
	if slices.EqualFunc(req.Elements, inOrder, bytes.Equal) {
		t.Fatal("round 1 elements are in ID order")
	}
}

func (p *party) permutationIdentity() []int {
	o := make([]int, len(p.ids))
	for i := range o {
		o[i] = i
	}
	return o
}

func TestMalformedPeerMessages(t *testing.T) {
	good := func() [][]byte { return blindIDs(dedup(Uint64Keys([]uint64{1, 2})), []int{0, 1}, mustScalar(t)) }
	identity := ristretto255.NewElement().Encode(nil)
	notCanonical := bytes.Repeat([]byte{0xff}, 32)
	tests := []struct {
		name    string
		mutate  func(q *Request)
		wantErr string
	}{
		{"short element", func(q *Request) { q.Elements[0] = q.Elements[0][:31] }, "element 0 (31 bytes): not a canonical"},
		{"non-canonical element", func(q *Request) { q.Elements[1] = notCanonical }, "element 1 (32 bytes): not a canonical"},
		{"identity element", func(q *Request) { q.Elements[0] = identity }, "identity element"},
		{"duplicate element", func(q *Request) { q.Elements[1] = q.Elements[0] }, "elements 0 and 1 are equal"},
		{"wrong round", func(q *Request) { q.Round = 2 }, "unexpected round 2"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := NewResponder(Uint64Keys([]uint64{1, 3}), nil)
			if err != nil {
				t.Fatal(err)
			}
			q := &Request{Round: 1, Elements: good()}
			tc.mutate(q)
			_, err = r.Handle(q)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("Handle: error %v, want one containing %q", err, tc.wantErr)
			}
			// The failure is sticky.
			if _, err := r.Handle(&Request{Round: 1, Elements: good()}); err == nil {
				t.Fatal("responder accepted a request after a failed round")
			}
		})
	}
}

func TestMalformedResponderAnswers(t *testing.T) {
	tests := []struct {
		name    string
		mutate  func(a *Response)
		wantErr string
	}{
		{"bad own element", func(a *Response) { a.Own[0] = []byte{1, 2, 3} }, "responder's own elements: element 0 (3 bytes)"},
		{"bad answered element", func(a *Response) { a.Elements[1] = bytes.Repeat([]byte{0xff}, 32) }, "round 1 answer: element 1"},
		{"missing answers", func(a *Response) { a.Elements = a.Elements[:1] }, "has 1 elements, 2 were sent"},
		{"wrong round", func(a *Response) { a.Round = 2 }, "expected the answer to round 1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := NewResponder(Uint64Keys([]uint64{1, 3}), nil)
			if err != nil {
				t.Fatal(err)
			}
			in, err := NewInitiator(Uint64Keys([]uint64{1, 2}), nil)
			if err != nil {
				t.Fatal(err)
			}
			q, err := in.Round1()
			if err != nil {
				t.Fatal(err)
			}
			a, err := r.Handle(q)
			if err != nil {
				t.Fatal(err)
			}
			tc.mutate(a)
			if _, err := in.Round2(a); err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("Round2: error %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}

func TestDigestMismatch(t *testing.T) {
	r, err := NewResponder(Uint64Keys([]uint64{1, 3}), nil)
	if err != nil {
		t.Fatal(err)
	}
	in, err := NewInitiator(Uint64Keys([]uint64{1, 2}), nil)
	if err != nil {
		t.Fatal(err)
	}
	q, _ := in.Round1()
	a, err := r.Handle(q)
	if err != nil {
		t.Fatal(err)
	}
	q2, err := in.Round2(a)
	if err != nil {
		t.Fatal(err)
	}
	q2.Digest = bytes.Repeat([]byte{7}, DigestSize)
	if _, err := r.Handle(q2); err == nil || !strings.Contains(err.Error(), "disagree") {
		t.Fatalf("responder accepted a wrong digest: %v", err)
	}
	if err := in.Finish(&Response{Round: 2, Digest: q2.Digest}); err == nil || !strings.Contains(err.Error(), "disagree") {
		t.Fatalf("initiator accepted a wrong digest: %v", err)
	}
	if _, err := in.Intersection(); err == nil {
		t.Fatal("Intersection succeeded before Finish")
	}
}

func mustScalar(t *testing.T) *ristretto255.Scalar {
	p, err := newParty(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return p.secret
}

func BenchmarkPSI1000(b *testing.B) {
	x := make([]uint64, 1000)
	y := make([]uint64, 1000)
	for i := range x {
		x[i], y[i] = uint64(i), uint64(i+500)
	}
	for b.Loop() {
		r, _ := NewResponder(Uint64Keys(y), nil)
		if _, err := RunUint64(x, nil, r.Handle); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPSI20000 is the measurement of docs/SCALING.md: 20 000 IDs on
// each side, half shared; run with -cpu 1,2 to see the spread over cores.
func BenchmarkPSI20000(b *testing.B) {
	if testing.Short() {
		b.Skip("long benchmark")
	}
	const n = 20000
	x := make([]uint64, n)
	y := make([]uint64, n)
	for i := range x {
		x[i], y[i] = uint64(i), uint64(i+n/2)
	}
	for b.Loop() {
		r, _ := NewResponder(Uint64Keys(y), nil)
		if _, err := RunUint64(x, nil, r.Handle); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/(2*n), "µs/ID")
}

// TestParallelCoversEachIndexOnce checks the claiming loop of parallel:
// every index of [0, n) in exactly one call, calls within parallelChunk,
// whatever the core count and however slow one call is.
func TestParallelCoversEachIndexOnce(t *testing.T) {
	for _, tc := range []struct{ n, procs int }{{0, 4}, {1, 4}, {parallelChunk, 8}, {parallelChunk + 1, 2}, {1000, 3}, {4097, 16}} {
		old := runtime.GOMAXPROCS(tc.procs)
		seen := make([]atomic.Int32, tc.n)
		parallel(tc.n, func(lo, hi int) {
			if hi-lo > parallelChunk && tc.procs > 1 && tc.n > parallelChunk {
				t.Errorf("n %d: a call of %d IDs, more than a chunk", tc.n, hi-lo)
			}
			if lo == 0 {
				time.Sleep(time.Millisecond) // a slow core: the others take its share
			}
			for i := lo; i < hi; i++ {
				seen[i].Add(1)
			}
		})
		runtime.GOMAXPROCS(old)
		for i := range seen {
			if c := seen[i].Load(); c != 1 {
				t.Fatalf("n %d, %d procs: index %d covered %d times", tc.n, tc.procs, i, c)
			}
		}
	}
}
