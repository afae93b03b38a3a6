package psi

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gtank/ristretto255"
)

// plainCommon is the intersection of every set by counting: the reference.
func plainCommon(sets ...[]uint64) []uint64 {
	count := map[uint64]int{}
	for _, s := range sets {
		for _, v := range s {
			count[v]++
		}
	}
	out := []uint64{}
	for v, c := range count {
		if c == len(sets) {
			out = append(out, v)
		}
	}
	slices.Sort(out)
	return out
}

// runHubParties runs the hub protocol of hub IDs y with one passive per
// set of xs, each over its own goroutine; call wraps each passive's call
// (nil: none). It returns every passive's result and error.
func runHubParties(t *testing.T, y []uint64, xs [][]uint64, hubOpt StreamOptions, passiveOpt func(k int) StreamOptions,
	wrap func(k int, req *Request, handle func(*Request) (*Response, error)) (*Response, error)) (*Hub, [][]uint64, []error) {
	t.Helper()
	hub, err := NewHub(y, len(xs), hubOpt)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	got := make([][]uint64, len(xs))
	errs := make([]error, len(xs))
	var wg sync.WaitGroup
	for k := range xs {
		wg.Go(func() {
			handle := func(req *Request) (*Response, error) { return hub.Handle(ctx, k, req) }
			call := handle
			if wrap != nil {
				call = func(req *Request) (*Response, error) { return wrap(k, req, handle) }
			}
			got[k], errs[k] = RunAlignUint64(xs[k], passiveOpt(k), call)
		})
	}
	wg.Wait()
	return hub, got, errs
}

func TestHubMatchesPlain(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	tests := []struct {
		name    string
		k       int
		ny, nx  int
		max     uint64
		planted int // IDs put into every set
		chunk   int
		partB   int64
	}{
		{"one passive", 1, 300, 200, 1000, 40, 64, 0},
		{"two passives", 2, 300, 250, 2000, 30, 64, 0},
		{"three passives, partitions", 3, 800, 700, 3000, 90, 100, 4096},
		{"four passives, chunk 1", 4, 40, 30, 200, 5, 1, 0},
		{"empty intersection", 3, 200, 200, 1 << 62, 0, 50, 0},
		{"empty hub", 2, 0, 50, 100, 0, 8, 0},
		{"one empty passive", 3, 50, 50, 100, 0, 8, 0},
		{"large ids", 2, 300, 300, 1<<64 - 1, 60, 128, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			planted := distinct(rng, tc.planted, tc.max)
			with := func(n int) []uint64 {
				s := append(distinct(rng, n, tc.max), planted...)
				s = slices.Compact(slices.Sorted(slices.Values(s)))
				rng.Shuffle(len(s), func(i, j int) { s[i], s[j] = s[j], s[i] })
				return s
			}
			y := with(tc.ny)
			xs := make([][]uint64, tc.k)
			for k := range xs {
				xs[k] = with(tc.nx)
			}
			if tc.name == "one empty passive" {
				xs[1] = nil
			}
			dir := t.TempDir()
			opt := StreamOptions{Chunk: tc.chunk, PartitionBytes: tc.partB, Dir: dir}
			var mu sync.Mutex
			maxMsg := 0
			hub, got, errs := runHubParties(t, y, xs, opt, func(int) StreamOptions { return opt },
				func(_ int, req *Request, handle func(*Request) (*Response, error)) (*Response, error) {
					resp, err := handle(req)
					mu.Lock()
					maxMsg = max(maxMsg, len(req.Elements))
					if resp != nil {
						maxMsg = max(maxMsg, len(resp.Elements), len(resp.Own))
					}
					mu.Unlock()
					return resp, err
				})
			want := plainCommon(append([][]uint64{y}, xs...)...)
			if tc.planted > 0 && len(want) < tc.planted {
				t.Fatalf("reference: %d common, %d planted", len(want), tc.planted)
			}
			for k := range xs {
				if errs[k] != nil {
					t.Fatalf("passive %d: %v", k, errs[k])
				}
				if !slices.Equal(got[k], want) {
					t.Errorf("passive %d: %d common, want %d", k, len(got[k]), len(want))
				}
			}
			hgot, err := hub.Intersection()
			if err != nil || !slices.Equal(hgot, want) {
				t.Errorf("hub: %d common (%v), want %d", len(hgot), err, len(want))
			}
			if maxMsg > tc.chunk {
				t.Errorf("a message of %d elements, chunk %d", maxMsg, tc.chunk)
			}
			if left, _ := os.ReadDir(dir); len(left) != 0 {
				t.Errorf("spill files left: %v", left)
			}
		})
	}
}

// TestHubDuplicatesAndFailures: duplicates are refused on either side and
// one passive's failure ends every passive's run with an error (none
// waits for ever).
func TestHubDuplicatesAndFailures(t *testing.T) {
	tests := []struct {
		name  string
		y     []uint64
		xs    [][]uint64
		chunk int // of every party: 1 puts the duplicates in two chunks
		want  string
	}{
		{"passive duplicate", []uint64{1, 2, 3}, [][]uint64{{1, 2}, {5, 2, 5}}, 16, "did not deduplicate"},
		{"passive duplicate across chunks", []uint64{1, 2, 3}, [][]uint64{{1, 2}, {5, 2, 7, 5}}, 1, "the peer sent an element twice"},
		{"hub duplicate", []uint64{1, 2, 1}, [][]uint64{{1, 2}, {2, 3}}, 1, "ID 1 is given twice"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			opt := func(int) StreamOptions { return StreamOptions{Chunk: tc.chunk} }
			_, _, errs := runHubParties(t, tc.y, tc.xs, StreamOptions{Chunk: tc.chunk}, opt, nil)
			for k, err := range errs {
				if err == nil {
					t.Errorf("passive %d: no error", k)
				}
			}
			if !strings.Contains(fmt.Sprint(errs), tc.want) {
				t.Errorf("errors %v, want one saying %q", errs, tc.want)
			}
		})
	}
	t.Run("a two-party initiator refuses a hub", func(t *testing.T) {
		hub, _ := NewHub([]uint64{1}, 1, StreamOptions{})
		defer hub.Close()
		_, err := RunStreamUint64([]uint64{1}, StreamOptions{}, func(r *Request) (*Response, error) { return hub.Handle(context.Background(), 0, r) })
		if err == nil || !strings.Contains(err.Error(), "expected the answer to hello") {
			t.Errorf("error %v", err)
		}
	})
	t.Run("a result outside the passive's set", func(t *testing.T) {
		hub, _ := NewHub([]uint64{1, 2, 3}, 1, StreamOptions{})
		defer hub.Close()
		_, err := RunAlignUint64([]uint64{2, 3, 4}, StreamOptions{}, func(r *Request) (*Response, error) {
			resp, err := hub.Handle(context.Background(), 0, r)
			if err == nil && r.Round == RoundHubResult && len(resp.Elements) > 0 {
				resp.Elements = [][]byte{Uint64Key(1), Uint64Key(2)} // 1 is not the passive's
			}
			return resp, err
		})
		if err == nil || !strings.Contains(err.Error(), "2 IDs, 1 of them are this party's") {
			t.Errorf("error %v", err)
		}
	})
	t.Run("a result chunk asked again", func(t *testing.T) {
		ids := []uint64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
		hub, _ := NewHub(ids, 1, StreamOptions{Chunk: 3})
		defer hub.Close()
		asked := 0
		got, err := RunAlignUint64(ids, StreamOptions{Chunk: 3}, func(r *Request) (*Response, error) {
			resp, err := hub.Handle(context.Background(), 0, r)
			if err != nil || r.Round != RoundHubResult {
				return resp, err
			}
			// The answer is lost: the passive asks again and must get
			// the same chunk, not the next.
			again, err := hub.Handle(context.Background(), 0, r)
			if err != nil {
				return nil, err
			}
			if fmt.Sprint(again.Elements) != fmt.Sprint(resp.Elements) {
				t.Errorf("asked again at %x: %d IDs, first %d", r.Digest, len(again.Elements), len(resp.Elements))
			}
			asked++
			return again, nil
		})
		if err != nil || !slices.Equal(got, ids) || asked != 5 {
			t.Errorf("result %v (%v) after %d result requests, want all 10 IDs after 5 (4 chunks of 3 and the end)", got, err, asked)
		}
		if _, err := hub.Handle(context.Background(), 0, &Request{Round: RoundHubResult, Digest: Uint64Key(11)}); err == nil || !strings.Contains(err.Error(), "0 to 10") {
			t.Errorf("a result request past the end: %v", err)
		}
	})
	t.Run("closed while a passive waits", func(t *testing.T) {
		hub, _ := NewHub([]uint64{1, 2}, 2, StreamOptions{})
		go func() { time.Sleep(50 * time.Millisecond); hub.Close() }()
		_, err := RunAlignUint64([]uint64{1}, StreamOptions{}, func(r *Request) (*Response, error) { return hub.Handle(context.Background(), 0, r) })
		if err == nil || !strings.Contains(err.Error(), "closed") {
			t.Errorf("error %v", err)
		}
	})
	t.Run("out of order and bad passive number", func(t *testing.T) {
		hub, _ := NewHub([]uint64{1}, 2, StreamOptions{})
		defer hub.Close()
		if _, err := hub.Handle(context.Background(), 2, &Request{Round: RoundStreamHello}); err == nil || !strings.Contains(err.Error(), "passive 2 of 2") {
			t.Errorf("error %v", err)
		}
		if _, err := hub.Handle(context.Background(), 0, &Request{Round: RoundHubResult}); err == nil || !strings.Contains(err.Error(), "unexpected round 23") {
			t.Errorf("error %v", err)
		}
		if _, err := hub.Handle(context.Background(), 1, &Request{Round: RoundStreamHello, Digest: make([]byte, 8)}); err == nil || !strings.Contains(err.Error(), "earlier request failed") {
			t.Errorf("error after another passive's failure %v", err)
		}
	})
}

// TestHubWhatEachPartySees checks the leakage the hub protocol claims
// (hub.go): the hub sees each passive's elements under that passive's own
// secret, so it cannot match two passives' elements (here 200 common IDs
// outside its set); a passive sees no doubly-blinded element of its own
// IDs and receives only the full intersection in the clear, not its
// pairwise intersection with the hub.
func TestHubWhatEachPartySees(t *testing.T) {
	seq := func(lo, hi uint64) []uint64 {
		var s []uint64
		for v := lo; v < hi; v++ {
			s = append(s, v)
		}
		return s
	}
	y := seq(0, 200)                               // hub
	xs := [][]uint64{seq(100, 400), seq(150, 450)} // Y∩X1 = 100..199, X1∩X2 = 150..399
	full := seq(150, 200)

	type transcript struct {
		xs, ys   [][]byte // what the hub received: x chunks, returned y chunks
		xAnswers int      // elements in the hub's answers to x chunks
		yOwn     int      // the hub's own elements the passive received
		clear    []uint64 // IDs the passive received in the clear
	}
	run := func(t *testing.T, sameSecret bool) ([2]transcript, *Hub, [][]uint64) {
		var tr [2]transcript
		passiveOpt := func(k int) StreamOptions {
			seed := [32]byte{byte(k + 1)}
			if sameSecret {
				seed = [32]byte{9}
			}
			return StreamOptions{Chunk: 64, Rand: rand.NewChaCha8(seed)}
		}
		hub, got, errs := runHubParties(t, y, xs, StreamOptions{Chunk: 64}, passiveOpt,
			func(k int, req *Request, handle func(*Request) (*Response, error)) (*Response, error) {
				resp, err := handle(req)
				if err != nil {
					return resp, err
				}
				for _, e := range req.Elements {
					switch req.Round {
					case RoundHubX:
						tr[k].xs = append(tr[k].xs, bytes.Clone(e))
					case RoundHubY:
						tr[k].ys = append(tr[k].ys, bytes.Clone(e))
					}
				}
				switch req.Round {
				case RoundHubX:
					tr[k].xAnswers += len(resp.Elements) + len(resp.Own)
				case RoundHubY:
					tr[k].yOwn += len(resp.Own)
				case RoundHubResult:
					ids, err := Uint64s(resp.Elements)
					if err != nil {
						t.Error(err)
					}
					tr[k].clear = append(tr[k].clear, ids...)
				}
				return resp, nil
			})
		for k, err := range errs {
			if err != nil {
				t.Fatalf("passive %d: %v", k, err)
			}
		}
		return tr, hub, got
	}
	// matches counts the elements of a that equal one of b's, also after
	// the hub raises each side to either of its secrets (its best use of
	// what it holds).
	matches := func(hub *Hub, a, b [][]byte) int {
		raise := func(in [][]byte, s *ristretto255.Scalar) map[string]bool {
			out := map[string]bool{}
			for _, e := range in {
				p := ristretto255.NewElement()
				if err := p.Decode(e); err != nil {
					t.Fatal(err)
				}
				out[string(p.ScalarMult(s, p).Encode(nil))] = true
			}
			return out
		}
		one := ristretto255.NewScalar()
		one.FromUniformBytes(append([]byte{1}, make([]byte, 63)...))
		best := 0
		for _, sa := range []*ristretto255.Scalar{one, hub.peers[0].p.secret, hub.peers[1].p.secret} {
			for _, sb := range []*ristretto255.Scalar{one, hub.peers[0].p.secret, hub.peers[1].p.secret} {
				ra, rb := raise(a, sa), raise(b, sb)
				n := 0
				for e := range ra {
					if rb[e] {
						n++
					}
				}
				best = max(best, n)
			}
		}
		return best
	}

	tr, hub, got := run(t, false)
	if n := matches(hub, tr[0].xs, tr[1].xs); n != 0 {
		t.Errorf("the hub matched %d of the passives' x elements with each other, want 0 (they hold %d common IDs)", n, 250)
	}
	if n := matches(hub, tr[0].ys, tr[1].ys); n != 0 {
		t.Errorf("the hub matched %d of its own IDs' elements across passives, want 0", n)
	}
	for k := range xs {
		if tr[k].xAnswers != 0 {
			t.Errorf("passive %d got %d elements back for its x chunks, want none", k, tr[k].xAnswers)
		}
		if tr[k].yOwn != len(y) {
			t.Errorf("passive %d got %d hub elements, want |Y| = %d", k, tr[k].yOwn, len(y))
		}
		if !slices.Equal(tr[k].clear, full) || !slices.Equal(got[k], full) {
			t.Errorf("passive %d received %d IDs in the clear (result %d), want the %d of the full intersection (its pairwise one has 100)",
				k, len(tr[k].clear), len(got[k]), len(full))
		}
	}

	// The control: passives that shared one secret would be matched by
	// the hub on their 250 common IDs — the check above can fail.
	tr, hub, _ = run(t, true)
	if n := matches(hub, tr[0].xs, tr[1].xs); n != 250 {
		t.Errorf("control: passives with one secret: the hub matched %d x elements, want |X1∩X2| = 250", n)
	}
}

// TestHubLongPoll: a passive that finishes long before another is told to
// ask again (RoundHubWait) instead of waiting past its call timeout, and
// both get the intersection.
func TestHubLongPoll(t *testing.T) {
	hub, err := NewHub([]uint64{1, 2, 3, 4}, 2, StreamOptions{})
	if err != nil {
		t.Fatal(err)
	}
	hub.Poll = 20 * time.Millisecond
	xs := [][]uint64{{2, 3, 9}, {3, 4, 2}}
	waits := 0
	got := make([][]uint64, 2)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for k := range xs {
		wg.Go(func() {
			if k == 1 {
				time.Sleep(2500 * time.Millisecond) // longer than passive 0's call timeout
			}
			got[k], errs[k] = RunAlignUint64(xs[k], StreamOptions{}, func(r *Request) (*Response, error) {
				ctx, cancel := context.WithTimeout(context.Background(), time.Second) // a call timeout
				defer cancel()
				resp, err := hub.Handle(ctx, k, r)
				if k == 0 && err == nil && resp.Round == RoundHubWait {
					waits++
				}
				return resp, err
			})
		})
	}
	wg.Wait()
	for k := range xs {
		if errs[k] != nil || !slices.Equal(got[k], []uint64{2, 3}) {
			t.Errorf("passive %d: %v, %v; want [2 3]", k, got[k], errs[k])
		}
	}
	if waits < 3 {
		t.Errorf("passive 0 was told to wait %d times, want several (2.5 s at 20 ms polls)", waits)
	}
}
