// Package psi is an ECDH-based private set intersection over the
// ristretto255 group, written as a transport-agnostic message-passing state
// machine: the two roles exchange plain Go values made of byte slices, so
// the protocol runs over gRPC unary calls (transport/grpcnet) as easily as
// in a unit test.
//
// # Protocol
//
// The Initiator (in splitguard: the passive party, the gRPC client) holds a
// set X and a secret scalar a; the Responder (the active party, the gRPC
// server) holds a set Y and a secret scalar b. H maps an ID to a group
// element: SHA-512 of a fixed domain-separation prefix followed by the ID
// bytes gives 64 uniform bytes, mapped into the group with the ristretto255
// one-way map. Both scalars are drawn from crypto/rand (never zero) and live
// only for one run.
//
//	round 1  I → R  Request{Round 1, Elements: {H(x)^a : x ∈ X}, shuffled}
//	         R → I  Response{Round 1,
//	                  Elements: {H(x)^ab}, in the order received,
//	                  Own:      {H(y)^b : y ∈ Y}, shuffled}
//	round 2  I → R  Request{Round 2,
//	                  Elements: {H(y)^ba}, in the order received,
//	                  Digest:   D(X ∩ Y)}
//	         R → I  Response{Round 2, Digest: D(X ∩ Y)}
//
// After round 1 the Initiator knows H(x)^ab for each of its own x (it knows
// the order it sent) and the set {H(y)^ab}, hence X ∩ Y. After round 2 the
// Responder knows H(y)^ab for each of its own y and (from round 1) the set
// {H(x)^ab}, hence X ∩ Y too. The digest D is SHA-256 over the sorted
// doubly-blinded encodings of the intersection; each side checks that the
// other found the same intersection, and a mismatch is an error on both
// sides.
//
// # What each party learns
//
// Both parties learn the intersection X ∩ Y and the size of the other's
// set; nothing else about the other's IDs (under the decisional
// Diffie–Hellman assumption in ristretto255, modelling H as a random oracle,
// against semi-honest parties). The messages carry only blinded group
// elements and the digest: neither raw IDs nor their plain hashes ever
// appear. A malicious party can cheat (e.g. answer with made-up elements);
// the digest check turns such a deviation into a detected mismatch only
// when the two results differ.
//
// # Inputs
//
// IDs are byte strings; the uint64 form encodes an ID as 8 big-endian bytes
// (Uint64Key), so that the byte order of keys is their numeric order.
// Duplicate IDs in an input are removed before the protocol starts (a set
// intersection has no multiplicities); the other party sees the size of the
// deduplicated set. Results are sorted (bytewise, which for the uint64 form
// is numeric order) and free of duplicates.
//
// # More than two parties
//
// Hub (hub.go) aligns an active party with K passive parties: a one-sided
// streamed PSI with each passive under fresh secrets, after which every
// passive receives the full intersection. The hub learns which of its IDs
// each passive holds; a passive learns only the full intersection. The
// passive's RunAlignUint64 speaks either protocol, as the responder
// answers. docs/methods/alignment.md states the leakage and the choice.
package psi

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/gtank/ristretto255"
)

// ElementSize is the length of an encoded group element in a message.
const ElementSize = 32

// DigestSize is the length of a message's intersection digest.
const DigestSize = sha256.Size

// hashPrefix separates this hash-to-group from every other use of SHA-512
// over IDs. Its length is fixed, so prefix||id is unambiguous.
const hashPrefix = "splitguard/psi/v1/hash-to-ristretto255\x00"

// digestPrefix separates the intersection digest from other SHA-256 uses.
const digestPrefix = "splitguard/psi/v1/intersection-digest\x00"

// Request is the Initiator's message of one round.
type Request struct {
	// Round is 1 or 2.
	Round int
	// Elements are encoded group elements (ElementSize bytes each).
	Elements [][]byte
	// Digest is the Initiator's intersection digest (round 2 only).
	Digest []byte
}

// Response is the Responder's answer to one Request.
type Response struct {
	// Round is the round answered.
	Round int
	// Elements are the request's elements raised to the Responder's
	// secret, in the order received (round 1 only).
	Elements [][]byte
	// Own are the Responder's blinded IDs, shuffled (round 1 only).
	Own [][]byte
	// Digest is the Responder's intersection digest (round 2 only).
	Digest []byte
}

// Uint64Key returns the byte form of a uint64 ID: 8 bytes, big-endian.
func Uint64Key(id uint64) []byte { return binary.BigEndian.AppendUint64(nil, id) }

// Uint64Keys returns the byte form of every ID.
func Uint64Keys(ids []uint64) [][]byte {
	out := make([][]byte, len(ids))
	for i, id := range ids {
		out[i] = Uint64Key(id)
	}
	return out
}

// StringKeys returns the byte form of every string ID (its bytes).
func StringKeys(ids []string) [][]byte {
	out := make([][]byte, len(ids))
	for i, id := range ids {
		out[i] = []byte(id)
	}
	return out
}

// Uint64s decodes keys made by Uint64Key.
func Uint64s(keys [][]byte) ([]uint64, error) {
	out := make([]uint64, len(keys))
	for i, k := range keys {
		if len(k) != 8 {
			return nil, fmt.Errorf("psi: key %d has %d bytes, a uint64 key has 8", i, len(k))
		}
		out[i] = binary.BigEndian.Uint64(k)
	}
	return out, nil
}

// party is what both roles share: the deduplicated IDs and the secret.
type party struct {
	ids    [][]byte // deduplicated, sorted
	secret *ristretto255.Scalar
	shuf   *mrand.Rand
	result [][]byte // nil until known
	digest []byte
}

func newParty(ids [][]byte, rng io.Reader) (*party, error) {
	if rng == nil {
		rng = rand.Reader
	}
	var seed [64]byte
	secret := ristretto255.NewScalar()
	zero := ristretto255.NewScalar()
	for {
		if _, err := io.ReadFull(rng, seed[:]); err != nil {
			return nil, fmt.Errorf("psi: drawing the secret scalar: %w", err)
		}
		secret.FromUniformBytes(seed[:])
		if secret.Equal(zero) == 0 {
			break
		}
	}
	var shufSeed [32]byte
	if _, err := io.ReadFull(rng, shufSeed[:]); err != nil {
		return nil, fmt.Errorf("psi: drawing the shuffle seed: %w", err)
	}
	return &party{ids: dedup(ids), secret: secret, shuf: mrand.New(mrand.NewChaCha8(shufSeed))}, nil
}

// dedup returns a sorted copy of ids without duplicates.
func dedup(ids [][]byte) [][]byte {
	out := make([][]byte, len(ids))
	for i, id := range ids {
		out[i] = bytes.Clone(id)
	}
	slices.SortFunc(out, bytes.Compare)
	return slices.CompactFunc(out, bytes.Equal)
}

// hashToGroup returns H(id).
func hashToGroup(id []byte) *ristretto255.Element {
	h := sha512.New()
	h.Write([]byte(hashPrefix))
	h.Write(id)
	return ristretto255.NewElement().FromUniformBytes(h.Sum(nil))
}

// blindIDs returns the encodings of H(ids[order[i]])^s.
func blindIDs(ids [][]byte, order []int, s *ristretto255.Scalar) [][]byte {
	out := make([][]byte, len(order))
	parallel(len(order), func(lo, hi int) {
		p := ristretto255.NewElement()
		for i := lo; i < hi; i++ {
			p.ScalarMult(s, hashToGroup(ids[order[i]]))
			out[i] = p.Encode(make([]byte, 0, ElementSize))
		}
	})
	return out
}

// reblind decodes every element of in, checks it, and returns the
// encodings of element^s in the same order. what names the list in errors.
func reblind(in [][]byte, s *ristretto255.Scalar, what string) ([][]byte, error) {
	out := make([][]byte, len(in))
	errs := make([]error, len(in))
	parallel(len(in), func(lo, hi int) {
		p, q, id := ristretto255.NewElement(), ristretto255.NewElement(), ristretto255.NewElement()
		for i := lo; i < hi; i++ {
			if err := p.Decode(in[i]); err != nil {
				errs[i] = fmt.Errorf("psi: %s: element %d (%d bytes): not a canonical ristretto255 encoding", what, i, len(in[i]))
				continue
			}
			if p.Equal(id) == 1 {
				errs[i] = fmt.Errorf("psi: %s: element %d is the identity element", what, i)
				continue
			}
			q.ScalarMult(s, p)
			out[i] = q.Encode(make([]byte, 0, ElementSize))
		}
	})
	if err := firstErr(errs); err != nil {
		return nil, err
	}
	if i, j, ok := findDuplicate(in); ok {
		return nil, fmt.Errorf("psi: %s: elements %d and %d are equal (the sender did not deduplicate its set)", what, i, j)
	}
	return out, nil
}

func firstErr(errs []error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

func findDuplicate(in [][]byte) (int, int, bool) {
	seen := make(map[string]int, len(in))
	for i, e := range in {
		if j, ok := seen[string(e)]; ok {
			return j, i, true
		}
		seen[string(e)] = i
	}
	return 0, 0, false
}

// digest returns D over the doubly-blinded encodings of the intersection.
func digest(doubly [][]byte) []byte {
	s := slices.Clone(doubly)
	slices.SortFunc(s, bytes.Compare)
	h := sha256.New()
	h.Write([]byte(digestPrefix))
	h.Write(binary.BigEndian.AppendUint64(nil, uint64(len(s))))
	for _, e := range s {
		h.Write(e)
	}
	return h.Sum(nil)
}

func (p *party) permutation() []int {
	order := make([]int, len(p.ids))
	for i := range order {
		order[i] = i
	}
	p.shuf.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	return order
}

// Initiator is the role that sends the first message (the passive party).
type Initiator struct {
	p     *party
	state int      // 0: new, 1: round 1 sent, 2: round 2 sent, 3: done
	order []int    // order[i] is the index in p.ids of the i-th element sent
	sent  [][]byte // round 1 elements
}

// NewInitiator prepares the Initiator for the given IDs (deduplicated; see
// the package doc). rng is the source of the secret and the shuffle; nil
// means crypto/rand.
func NewInitiator(ids [][]byte, rng io.Reader) (*Initiator, error) {
	p, err := newParty(ids, rng)
	if err != nil {
		return nil, err
	}
	return &Initiator{p: p}, nil
}

// Round1 returns the first message: the Initiator's blinded IDs, shuffled.
func (in *Initiator) Round1() (*Request, error) {
	if in.state != 0 {
		return nil, errors.New("psi: initiator: Round1 called twice")
	}
	in.order = in.p.permutation()
	in.sent = blindIDs(in.p.ids, in.order, in.p.secret)
	in.state = 1
	return &Request{Round: 1, Elements: in.sent}, nil
}

// Round2 takes the Responder's answer to round 1, computes the
// intersection, and returns the second message.
func (in *Initiator) Round2(resp *Response) (*Request, error) {
	if in.state != 1 {
		return nil, errors.New("psi: initiator: Round2 called out of order (call Round1 first, once)")
	}
	if resp == nil || resp.Round != 1 {
		return nil, fmt.Errorf("psi: initiator: expected the answer to round 1, got %s", describeResponse(resp))
	}
	if len(resp.Elements) != len(in.sent) {
		return nil, fmt.Errorf("psi: initiator: round 1 answer has %d elements, %d were sent", len(resp.Elements), len(in.sent))
	}
	// H(x)^ab for our x: the peer raised our elements to b; decoding
	// checks that each is a valid element.
	for i, e := range resp.Elements {
		if err := ristretto255.NewElement().Decode(e); err != nil {
			return nil, fmt.Errorf("psi: initiator: round 1 answer: element %d (%d bytes): not a canonical ristretto255 encoding", i, len(e))
		}
	}
	theirs, err := reblind(resp.Own, in.p.secret, "initiator: round 1 answer: the responder's own elements")
	if err != nil {
		return nil, err
	}
	set := make(map[string]struct{}, len(theirs))
	for _, e := range theirs {
		set[string(e)] = struct{}{}
	}
	var result, doubly [][]byte
	for i, e := range resp.Elements {
		if _, ok := set[string(e)]; ok {
			result = append(result, in.p.ids[in.order[i]])
			doubly = append(doubly, e)
		}
	}
	slices.SortFunc(result, bytes.Compare)
	in.p.result = nonNil(result)
	in.p.digest = digest(doubly)
	in.state = 2
	return &Request{Round: 2, Elements: theirs, Digest: in.p.digest}, nil
}

// Finish takes the Responder's answer to round 2 and checks that both
// found the same intersection.
func (in *Initiator) Finish(resp *Response) error {
	if in.state != 2 {
		return errors.New("psi: initiator: Finish called out of order (call Round2 first, once)")
	}
	if resp == nil || resp.Round != 2 {
		return fmt.Errorf("psi: initiator: expected the answer to round 2, got %s", describeResponse(resp))
	}
	if !bytes.Equal(resp.Digest, in.p.digest) {
		return errors.New("psi: initiator: the responder's intersection digest differs from ours: the parties disagree on the intersection")
	}
	in.state = 3
	return nil
}

// Intersection returns the sorted intersection once Finish has succeeded.
func (in *Initiator) Intersection() ([][]byte, error) {
	if in.state != 3 {
		return nil, errors.New("psi: initiator: the protocol has not finished")
	}
	return in.p.result, nil
}

// Responder is the role that answers (the active party).
type Responder struct {
	mu    sync.Mutex
	p     *party
	state int      // 0: new, 1: round 1 answered, 2: done
	order []int    // order[i] is the index in p.ids of the i-th Own element
	peer  [][]byte // H(x)^ab of the Initiator's elements
	err   error    // sticky failure
	done  chan struct{}
}

// NewResponder prepares the Responder for the given IDs (deduplicated; see
// the package doc). rng is the source of the secret and the shuffle; nil
// means crypto/rand.
func NewResponder(ids [][]byte, rng io.Reader) (*Responder, error) {
	p, err := newParty(ids, rng)
	if err != nil {
		return nil, err
	}
	return &Responder{p: p, done: make(chan struct{})}, nil
}

// Handle answers one request. It is safe for concurrent use, but the
// protocol is sequential: round 1 then round 2, each exactly once. After
// a failed or out-of-order request the Responder refuses every later one:
// the run must start a new PSI with fresh secrets.
func (r *Responder) Handle(req *Request) (*Response, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err != nil {
		return nil, fmt.Errorf("psi: responder: an earlier round failed: %w", r.err)
	}
	if req == nil {
		return nil, errors.New("psi: responder: nil request")
	}
	var resp *Response
	var err error
	switch {
	case req.Round == 1 && r.state == 0:
		resp, err = r.round1(req)
	case req.Round == 2 && r.state == 1:
		resp, err = r.round2(req)
	default:
		err = fmt.Errorf("psi: responder: unexpected round %d (%d rounds answered so far)", req.Round, r.state)
	}
	if err != nil {
		r.err = err
		return nil, err
	}
	return resp, nil
}

func (r *Responder) round1(req *Request) (*Response, error) {
	doubly, err := reblind(req.Elements, r.p.secret, "responder: round 1 request")
	if err != nil {
		return nil, err
	}
	r.peer = doubly
	r.order = r.p.permutation()
	own := blindIDs(r.p.ids, r.order, r.p.secret)
	r.state = 1
	return &Response{Round: 1, Elements: doubly, Own: own}, nil
}

func (r *Responder) round2(req *Request) (*Response, error) {
	if len(req.Elements) != len(r.order) {
		return nil, fmt.Errorf("psi: responder: round 2 request has %d elements, %d were sent", len(req.Elements), len(r.order))
	}
	for i, e := range req.Elements {
		if err := ristretto255.NewElement().Decode(e); err != nil {
			return nil, fmt.Errorf("psi: responder: round 2 request: element %d (%d bytes): not a canonical ristretto255 encoding", i, len(e))
		}
	}
	set := make(map[string]struct{}, len(r.peer))
	for _, e := range r.peer {
		set[string(e)] = struct{}{}
	}
	var result, doubly [][]byte
	for i, e := range req.Elements {
		if _, ok := set[string(e)]; ok {
			result = append(result, r.p.ids[r.order[i]])
			doubly = append(doubly, e)
		}
	}
	d := digest(doubly)
	if !bytes.Equal(d, req.Digest) {
		return nil, errors.New("psi: responder: the initiator's intersection digest differs from ours: the parties disagree on the intersection")
	}
	slices.SortFunc(result, bytes.Compare)
	r.p.result = nonNil(result)
	r.p.digest = d
	r.state = 2
	close(r.done)
	return &Response{Round: 2, Digest: d}, nil
}

// Done is closed once round 2 has been answered successfully.
func (r *Responder) Done() <-chan struct{} { return r.done }

// Intersection returns the sorted intersection once round 2 has been
// answered.
func (r *Responder) Intersection() ([][]byte, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.state != 2 {
		return nil, errors.New("psi: responder: the protocol has not finished")
	}
	return r.p.result, nil
}

// Run drives the Initiator through both rounds over call (for example a
// gRPC unary call) and returns the sorted intersection.
func Run(ids [][]byte, rng io.Reader, call func(*Request) (*Response, error)) ([][]byte, error) {
	in, err := NewInitiator(ids, rng)
	if err != nil {
		return nil, err
	}
	req, err := in.Round1()
	if err != nil {
		return nil, err
	}
	resp, err := call(req)
	if err != nil {
		return nil, fmt.Errorf("psi: round 1: %w", err)
	}
	if req, err = in.Round2(resp); err != nil {
		return nil, err
	}
	if resp, err = call(req); err != nil {
		return nil, fmt.Errorf("psi: round 2: %w", err)
	}
	if err := in.Finish(resp); err != nil {
		return nil, err
	}
	return in.Intersection()
}

// RunUint64 is Run for uint64 IDs; the result is sorted numerically.
func RunUint64(ids []uint64, rng io.Reader, call func(*Request) (*Response, error)) ([]uint64, error) {
	keys, err := Run(Uint64Keys(ids), rng, call)
	if err != nil {
		return nil, err
	}
	return Uint64s(keys)
}

func describeResponse(r *Response) string {
	if r == nil {
		return "no response"
	}
	return fmt.Sprintf("a response for round %d", r.Round)
}

func nonNil(s [][]byte) [][]byte {
	if s == nil {
		return [][]byte{}
	}
	return s
}

// parallelChunk is how many IDs a worker of parallel claims at a time:
// about a millisecond of curve arithmetic, long enough that claiming costs
// nothing, short enough that the work ends within a chunk of the same
// moment on every core.
const parallelChunk = 32

// parallel runs f over [0, n) in contiguous chunks of parallelChunk, on
// one goroutine per CPU that each claim the next unclaimed chunk until
// none is left. Claiming, not an equal share per goroutine, is what lets
// the work scale on a shared or virtual machine whose cores do not run at
// the same speed: with equal shares every core waits for the slowest (on
// a 16-vCPU cloud machine, two cores at a fixed half each took four times
// as long as one). Which goroutine runs a chunk never changes a result:
// f writes only the indices it is given.
func parallel(n int, f func(lo, hi int)) {
	workers := min(runtime.GOMAXPROCS(0), (n+parallelChunk-1)/parallelChunk)
	if workers <= 1 {
		f(0, n)
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				lo := int(next.Add(parallelChunk)) - parallelChunk
				if lo >= n {
					return
				}
				f(lo, min(lo+parallelChunk, n))
			}
		})
	}
	wg.Wait()
}
