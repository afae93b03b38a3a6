package psi

// The hub protocol: the ID alignment of one active party (the hub, which
// answers) with K passive parties (each an initiator), streamed as the
// two-party protocol is. The hub runs a one-sided ECDH PSI with each
// passive under a fresh secret per passive, learns each pairwise
// intersection, intersects them, and hands every passive the full
// intersection and nothing more:
//
//	hello    I → R  Request{RoundStreamHello, Digest: |X|}
//	         R → I  Response{RoundHubHello, Digest: |Y|}
//	x chunk  I → R  Request{RoundHubX, Elements: {H(x)^a}}, x in a keyed pseudo-random order
//	         R → I  Response{RoundHubX} (empty: the hub keeps H(x)^ab)
//	y chunk  I → R  Request{RoundHubY, Elements: {H(y)^ba} of the previous y chunk (none at first)}
//	         R → I  Response{RoundHubY, Own: the next chunk of {H(y)^b}, none when all are sent}
//	result   I → R  Request{RoundHubResult, Digest: the number of result IDs received so far}
//	         R → I  Response{RoundHubResult, Elements: the chunk of the full
//	                  intersection from there (8-byte big-endian IDs,
//	                  ascending), none at the end}
//	                or Response{RoundHubWait} (ask again)
//
// A result request waits until every passive's pairwise intersection is
// known, at most Hub.Poll; then the hub answers RoundHubWait and the
// passive asks again at once (a long poll), so that a passive whose set
// is small does not run into its transport's call timeout while the
// others are still sending theirs. What each party learns (semi-honest parties, DDH
// in ristretto255, H a random oracle):
//
//   - the hub: |X_k| and Y ∩ X_k for every passive k — which of its own IDs
//     each passive holds. It learns nothing of the passives' IDs outside
//     Y, so nothing of X_i ∩ X_j beyond Y ∩ X_i ∩ X_j: each passive blinds
//     with its own secret and the hub answers each with its own, so the
//     elements of two passives' transcripts are unrelated group elements.
//   - passive k: |Y| and the full intersection Y ∩ X_1 ∩ … ∩ X_K; not
//     Y ∩ X_k (it never sees H(x)^ab, so it cannot match the hub's
//     elements), nor anything of the other passives beyond the full
//     intersection (it exchanges no message with them).
//
// A passive checks that every ID of the result is one of its own; a hub
// that lies about the result otherwise is not detected (semi-honest).

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"
)

// Rounds of the hub protocol (the hello is the streamed protocol's
// RoundStreamHello; a hub answers it with RoundHubHello).
const (
	RoundHubHello  = 20
	RoundHubX      = 21
	RoundHubY      = 22
	RoundHubResult = 23
	RoundHubWait   = 24
)

// DefaultHubPoll is how long a result request waits for the other
// passives before the hub answers RoundHubWait.
const DefaultHubPoll = 10 * time.Second

// ErrHubClosed is the error of requests after Hub.Close.
var ErrHubClosed = errors.New("psi: hub: closed")

// Hub is the active party's side of the hub protocol with K passive
// parties, numbered 0..K-1. It is safe for concurrent use: each passive's
// requests go to Handle with its number, in the protocol's order.
type Hub struct {
	// Poll bounds how long one result request waits for the other
	// passives (DefaultHubPoll when 0); set it before the first request.
	Poll time.Duration

	peers  []*hubPeer
	joinMu sync.Mutex // one join at a time: memory of one spill partition

	mu     sync.Mutex
	left   int      // passives whose pairwise intersection is not known
	common []uint64 // the running intersection; nil before the first
	done   chan struct{}
	failed chan struct{}
	err    error
}

// hubPeer is the hub's state with one passive.
type hubPeer struct {
	mu sync.Mutex
	answerer
	state int // 0 new, 1 hello answered, 2 pairwise known
}

// NewHub prepares the hub for ids (free of duplicates; read in place, by
// every passive's protocol) and passives ≥ 1 passive parties, each with a
// fresh secret and order key drawn from opt.Rand.
func NewHub(ids []uint64, passives int, opt StreamOptions) (*Hub, error) {
	if passives < 1 {
		return nil, fmt.Errorf("psi: hub: %d passive parties, want at least 1", passives)
	}
	h := &Hub{left: passives, done: make(chan struct{}), failed: make(chan struct{})}
	for range passives {
		p, err := newStreamParty(ids, opt)
		if err != nil {
			return nil, err
		}
		h.peers = append(h.peers, &hubPeer{answerer: answerer{p: p, who: "hub"}})
	}
	return h, nil
}

// Passives is the number of passive parties.
func (h *Hub) Passives() int { return len(h.peers) }

// Handle answers one request of passive k. A result request waits (until
// ctx ends) for every passive's pairwise intersection. An error of any
// passive fails the whole hub: every later request is refused, and the
// alignment must start again with a new Hub.
func (h *Hub) Handle(ctx context.Context, k int, req *Request) (*Response, error) {
	if k < 0 || k >= len(h.peers) {
		return nil, fmt.Errorf("psi: hub: passive %d of %d", k, len(h.peers))
	}
	pe := h.peers[k]
	pe.mu.Lock()
	defer pe.mu.Unlock()
	if err := h.failure(); err != nil {
		return nil, err
	}
	resp, err := h.handle(ctx, k, pe, req)
	if err != nil {
		if ctx.Err() == nil || !errors.Is(err, ctx.Err()) {
			h.fail(fmt.Errorf("passive %d: %w", k, err))
		}
		return nil, err
	}
	return resp, nil
}

func (h *Hub) handle(ctx context.Context, k int, pe *hubPeer, req *Request) (*Response, error) {
	if req == nil {
		return nil, errors.New("psi: hub: nil request")
	}
	switch {
	case req.Round == RoundStreamHello && pe.state == 0:
		if err := pe.hello(req); err != nil {
			return nil, err
		}
		pe.state = 1
		return &Response{Round: RoundHubHello, Digest: binary.BigEndian.AppendUint64(nil, uint64(len(pe.p.ids)))}, nil
	case req.Round == RoundHubX && pe.state == 1:
		if _, err := pe.takeX(req); err != nil {
			return nil, err
		}
		return &Response{Round: RoundHubX}, nil
	case req.Round == RoundHubY && pe.state == 1:
		own, err := pe.nextY(req)
		if err != nil {
			return nil, err
		}
		return &Response{Round: RoundHubY, Own: own}, nil
	case req.Round == RoundHubResult && pe.state == 1:
		if !pe.allBack() {
			return nil, fmt.Errorf("psi: hub: result requested after %d of %d x elements and before all %d own elements came back", pe.gotX, pe.nX, len(pe.p.ids))
		}
		h.joinMu.Lock()
		pair, _, err := pe.p.join(fmt.Sprintf("hub with passive %d", k))
		h.joinMu.Unlock()
		if err != nil {
			return nil, err
		}
		if err := pe.p.close(); err != nil {
			return nil, err
		}
		pe.state = 2
		h.contribute(pair)
		fallthrough
	case req.Round == RoundHubResult && pe.state == 2:
		poll := h.Poll
		if poll <= 0 {
			poll = DefaultHubPoll
		}
		t := time.NewTimer(poll)
		defer t.Stop()
		select {
		case <-h.done:
		case <-h.failed:
			return nil, h.failure()
		case <-t.C:
			return &Response{Round: RoundHubWait}, nil
		case <-ctx.Done():
			return nil, fmt.Errorf("psi: hub: waiting for the other passive parties: %w", ctx.Err())
		}
		// The request says where to go on, so that asking again for a
		// chunk whose answer was lost is answered with the same chunk.
		if len(req.Digest) != 8 || binary.BigEndian.Uint64(req.Digest) > uint64(len(h.common)) {
			return nil, fmt.Errorf("psi: hub: passive %d: a result request must give the number of IDs received (0 to %d) in 8 bytes", k, len(h.common))
		}
		lo := int(binary.BigEndian.Uint64(req.Digest))
		hi := min(lo+pe.p.opt.Chunk, len(h.common))
		out := make([][]byte, 0, hi-lo)
		for _, id := range h.common[lo:hi] {
			out = append(out, Uint64Key(id))
		}
		return &Response{Round: RoundHubResult, Elements: out}, nil
	}
	return nil, fmt.Errorf("psi: hub: passive %d: unexpected round %d in state %d", k, req.Round, pe.state)
}

// contribute folds one passive's pairwise intersection (sorted) into the
// running one, closing done after the last.
func (h *Hub) contribute(pair []uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.common == nil {
		h.common = pair
	} else {
		h.common = intersectSorted(h.common, pair)
	}
	h.left--
	if h.left == 0 {
		close(h.done)
	}
}

// intersectSorted returns the common values of two ascending lists, in
// place of a.
func intersectSorted(a, b []uint64) []uint64 {
	out := a[:0]
	for i, j := 0, 0; i < len(a) && j < len(b); {
		switch {
		case a[i] < b[j]:
			i++
		case a[i] > b[j]:
			j++
		default:
			out = append(out, a[i])
			i++
			j++
		}
	}
	return out
}

func (h *Hub) fail(err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.err == nil {
		h.err = err
		close(h.failed)
	}
}

func (h *Hub) failure() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.err == nil {
		return nil
	}
	if errors.Is(h.err, ErrHubClosed) {
		return h.err
	}
	return fmt.Errorf("psi: hub: an earlier request failed: %w", h.err)
}

// Done is closed once every passive's pairwise intersection is known.
func (h *Hub) Done() <-chan struct{} { return h.done }

// Intersection returns the sorted intersection of the hub's IDs with every
// passive's, once Done is closed.
func (h *Hub) Intersection() ([]uint64, error) {
	select {
	case <-h.done:
		return slices.Clip(h.common), nil
	default:
		return nil, errors.New("psi: hub: the protocol has not finished with every passive party")
	}
}

// Close fails every unfinished request and removes the spill files.
func (h *Hub) Close() error {
	h.fail(ErrHubClosed)
	var first error
	for _, pe := range h.peers {
		pe.mu.Lock()
		if err := pe.p.close(); err != nil && first == nil {
			first = err
		}
		pe.mu.Unlock()
	}
	return first
}

// runHub is the passive's side of the hub protocol after the hello, whose
// answer announced nY hub IDs.
func runHub(p *streamParty, nY uint64, call func(*Request) (*Response, error)) ([]uint64, error) {
	err := p.sendX(call, RoundHubX, func(resp *Response, lo uint64, _ []uint64) error {
		if resp == nil || resp.Round != RoundHubX || len(resp.Elements) != 0 || len(resp.Own) != 0 {
			return fmt.Errorf("psi: initiator: x chunk at %d: expected an empty answer, got %s", lo, describeResponse(resp))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if err := p.exchangeY(call, RoundHubY, nY, "hub", func([][]byte) error { return nil }); err != nil {
		return nil, err
	}
	n := uint64(len(p.ids))
	result := []uint64{}
	for {
		resp, err := call(&Request{Round: RoundHubResult, Digest: binary.BigEndian.AppendUint64(nil, uint64(len(result)))})
		if err != nil {
			return nil, fmt.Errorf("psi: result at %d: %w", len(result), err)
		}
		if resp != nil && resp.Round == RoundHubWait && len(result) == 0 && len(resp.Elements) == 0 {
			continue // the other passives are not done: ask again
		}
		if resp == nil || resp.Round != RoundHubResult {
			return nil, fmt.Errorf("psi: initiator: expected a chunk of the result, got %s", describeResponse(resp))
		}
		if len(resp.Elements) == 0 {
			break
		}
		if uint64(len(result)+len(resp.Elements)) > min(n, nY) {
			return nil, fmt.Errorf("psi: initiator: the hub's result has more than the %d IDs the smaller set holds", min(n, nY))
		}
		for i, k := range resp.Elements {
			if len(k) != 8 {
				return nil, fmt.Errorf("psi: initiator: result at %d: ID %d has %d bytes, want 8", len(result), i, len(k))
			}
			id := binary.BigEndian.Uint64(k)
			if len(result) > 0 && id <= result[len(result)-1] {
				return nil, fmt.Errorf("psi: initiator: the hub's result is not in ascending order without repeats (%d after %d)", id, result[len(result)-1])
			}
			result = append(result, id)
		}
	}
	held := 0
	for _, id := range p.ids {
		if _, ok := slices.BinarySearch(result, id); ok {
			held++
		}
	}
	if held != len(result) {
		return nil, fmt.Errorf("psi: initiator: the hub's result has %d IDs, %d of them are this party's", len(result), held)
	}
	return result, nil
}
