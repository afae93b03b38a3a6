package psi

// The streamed protocol: the same ECDH intersection as Run, with the sets
// sent in chunks and the doubly-blinded elements spilled to disk, so that
// a party's working memory is bounded by the chunk and by one spill
// partition rather than by the number of IDs. It reuses the Request and
// Response messages (so any transport that carries Run carries it) with
// rounds of its own:
//
//	hello    I → R  Request{RoundStreamHello, Digest: |X| (8 bytes)}
//	         R → I  Response{RoundStreamHello, Digest: |Y|}
//	x chunk  I → R  Request{RoundStreamX, Elements: {H(x)^a}}, x in a keyed pseudo-random order
//	         R → I  Response{RoundStreamX, Elements: {H(x)^ab}, in the order received}
//	y chunk  I → R  Request{RoundStreamY, Elements: {H(y)^ba} of the previous y chunk (none at first)}
//	         R → I  Response{RoundStreamY, Own: the next chunk of {H(y)^b}, none when all are sent}
//	finish   I → R  Request{RoundStreamFinish, Digest: D}
//	         R → I  Response{RoundStreamFinish, Digest: D}
//
// Each party writes (H(own)^ab, own ID) and H(other)^ab to P partition
// files by the element's leading bits, then joins one partition at a time.
// Partitions hold contiguous ranges of the encodings' byte order, so the
// digest D (SHA-256 over the sorted doubly-blinded encodings of the
// intersection, then their count) is computed on the way. The order in
// which a party sends its elements is a pseudo-random permutation of its
// IDs under a secret key (a Feistel network), so that, as with Run's
// shuffle, the order reveals nothing, without holding a permutation of n
// indices in memory. What each party learns is what Run reveals: the
// intersection and the other set's size.

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/gtank/ristretto255"
)

// Rounds of the streamed protocol.
const (
	RoundStreamHello  = 10
	RoundStreamX      = 11
	RoundStreamY      = 12
	RoundStreamFinish = 13
)

// streamDigestPrefix separates the streamed protocol's digest.
const streamDigestPrefix = "splitguard/psi/stream/v1/intersection-digest\x00"

// StreamOptions tune the streamed protocol; zero fields take defaults.
type StreamOptions struct {
	// Chunk is the number of elements per message (default 65 536: 2 MiB
	// of elements).
	Chunk int
	// PartitionBytes is the target size of one spill partition, the
	// largest thing loaded at once when joining (default 64 MiB). The
	// partition count is capped at MaxPartitions.
	PartitionBytes int64
	// Dir holds the spill files (default os.TempDir()); they are removed
	// when the protocol ends.
	Dir string
	// Rand is the source of the secret scalar and the order key (nil:
	// crypto/rand).
	Rand io.Reader
}

// MaxPartitions caps the spill files of one party (open at once).
const MaxPartitions = 512

// recordSize is one spill record: a tag byte, the element, the ID.
const recordSize = 1 + ElementSize + 8

const (
	tagMine   = 1 // H(own)^ab and the own ID
	tagTheirs = 2 // H(other)^ab
)

func (o StreamOptions) withDefaults() StreamOptions {
	if o.Chunk <= 0 {
		o.Chunk = 1 << 16
	}
	if o.PartitionBytes <= 0 {
		o.PartitionBytes = 64 << 20
	}
	if o.Rand == nil {
		o.Rand = rand.Reader
	}
	return o
}

// streamParty is what both roles share: IDs, secret, order, spill files.
type streamParty struct {
	ids    []uint64
	secret *ristretto255.Scalar
	perm   *feistel
	opt    StreamOptions
	spill  *spill
}

func newStreamParty(ids []uint64, opt StreamOptions) (*streamParty, error) {
	opt = opt.withDefaults()
	var buf [64]byte
	if _, err := io.ReadFull(opt.Rand, buf[:]); err != nil {
		return nil, fmt.Errorf("psi: drawing a secret: %w", err)
	}
	s := ristretto255.NewScalar().FromUniformBytes(buf[:])
	if s.Equal(ristretto255.NewScalar()) == 1 {
		return nil, errors.New("psi: drew a zero secret")
	}
	var key [32]byte
	if _, err := io.ReadFull(opt.Rand, key[:]); err != nil {
		return nil, fmt.Errorf("psi: drawing the order key: %w", err)
	}
	return &streamParty{ids: ids, secret: s, perm: newFeistel(uint64(len(ids)), key), opt: opt}, nil
}

// openSpill creates the partition files once both set sizes are known.
func (p *streamParty) openSpill(nOther uint64) error {
	total := (uint64(len(p.ids)) + nOther) * recordSize
	parts := int((total + uint64(p.opt.PartitionBytes) - 1) / uint64(p.opt.PartitionBytes))
	var err error
	p.spill, err = newSpill(p.opt.Dir, max(1, min(parts, MaxPartitions)))
	return err
}

// blindChunk writes H(ids[perm(i)])^s for i in [lo, hi) into out (as
// encodings) and the IDs into idsOut, spreading the curve work over every
// core.
func (p *streamParty) blindChunk(lo, hi uint64, out [][]byte, idsOut []uint64) {
	for i := lo; i < hi; i++ {
		idsOut[i-lo] = p.ids[p.perm.apply(i)]
	}
	parallel(int(hi-lo), func(a, b int) {
		e := ristretto255.NewElement()
		var k [8]byte
		for j := a; j < b; j++ {
			binary.BigEndian.PutUint64(k[:], idsOut[j])
			e.ScalarMult(p.secret, hashToGroup(k[:]))
			out[j] = e.Encode(out[j][:0])
		}
	})
}

func (p *streamParty) close() error {
	if p.spill != nil {
		return p.spill.close()
	}
	return nil
}

// join reads the partitions one at a time and returns the sorted
// intersection and the digest.
func (p *streamParty) join(who string) ([]uint64, []byte, error) {
	if err := p.spill.flush(); err != nil {
		return nil, nil, err
	}
	h := sha256.New()
	h.Write([]byte(streamDigestPrefix))
	var result []uint64
	var count uint64
	type mine struct {
		e  []byte
		id uint64
	}
	for part := range p.spill.files {
		raw, err := os.ReadFile(p.spill.path(part))
		if err != nil {
			return nil, nil, fmt.Errorf("psi: %s: reading spill partition %d: %w", who, part, err)
		}
		if len(raw)%recordSize != 0 {
			return nil, nil, fmt.Errorf("psi: %s: spill partition %d has %d bytes, not whole records", who, part, len(raw))
		}
		var ours []mine
		var theirs [][]byte
		for off := 0; off < len(raw); off += recordSize {
			r := raw[off : off+recordSize]
			e := r[1 : 1+ElementSize]
			switch r[0] {
			case tagMine:
				ours = append(ours, mine{e, binary.BigEndian.Uint64(r[1+ElementSize:])})
			case tagTheirs:
				theirs = append(theirs, e)
			default:
				return nil, nil, fmt.Errorf("psi: %s: spill partition %d: bad record tag %d at byte %d", who, part, r[0], off)
			}
		}
		slices.SortFunc(ours, func(a, b mine) int { return bytes.Compare(a.e, b.e) })
		slices.SortFunc(theirs, bytes.Compare)
		for i := 1; i < len(ours); i++ {
			if bytes.Equal(ours[i-1].e, ours[i].e) {
				return nil, nil, fmt.Errorf("psi: %s: ID %d is given twice (the streamed protocol needs IDs without duplicates)", who, ours[i].id)
			}
		}
		for i := 1; i < len(theirs); i++ {
			if bytes.Equal(theirs[i-1], theirs[i]) {
				return nil, nil, fmt.Errorf("psi: %s: the peer sent an element twice (its set had duplicates)", who)
			}
		}
		for i, j := 0, 0; i < len(ours) && j < len(theirs); {
			switch c := bytes.Compare(ours[i].e, theirs[j]); {
			case c < 0:
				i++
			case c > 0:
				j++
			default:
				h.Write(ours[i].e)
				result = append(result, ours[i].id)
				count++
				i++
				j++
			}
		}
	}
	h.Write(binary.BigEndian.AppendUint64(nil, count))
	slices.Sort(result)
	if result == nil {
		result = []uint64{}
	}
	return result, h.Sum(nil), nil
}

// sendX sends the party's blinded IDs in chunks of round round, in the
// keyed order, handing each answer to take with the chunk's start and IDs.
func (p *streamParty) sendX(call func(*Request) (*Response, error), round int, take func(resp *Response, lo uint64, chunkIDs []uint64) error) error {
	n := uint64(len(p.ids))
	chunk := uint64(p.opt.Chunk)
	out := make([][]byte, chunk)
	for i := range out {
		out[i] = make([]byte, 0, ElementSize)
	}
	chunkIDs := make([]uint64, chunk)
	for lo := uint64(0); lo < n; lo += chunk {
		hi := min(lo+chunk, n)
		p.blindChunk(lo, hi, out, chunkIDs)
		resp, err := call(&Request{Round: round, Elements: out[:hi-lo]})
		if err != nil {
			return fmt.Errorf("psi: x chunk at %d: %w", lo, err)
		}
		if err := take(resp, lo, chunkIDs[:hi-lo]); err != nil {
			return err
		}
	}
	return nil
}

// exchangeY asks for the peer's nY blinded IDs in chunks of round round,
// returning each chunk reblinded, and hands every reblinded chunk to keep;
// peer names the other side in errors.
func (p *streamParty) exchangeY(call func(*Request) (*Response, error), round int, nY uint64, peer string, keep func(back [][]byte) error) error {
	var back [][]byte
	var got uint64
	for {
		resp, err := call(&Request{Round: round, Elements: back})
		if err != nil {
			return fmt.Errorf("psi: y chunk at %d: %w", got, err)
		}
		if resp == nil || resp.Round != round {
			return fmt.Errorf("psi: initiator: expected a y chunk, got %s", describeResponse(resp))
		}
		if len(resp.Own) == 0 {
			break
		}
		if got += uint64(len(resp.Own)); got > nY {
			return fmt.Errorf("psi: initiator: the %s sent more than the %d elements it announced", peer, nY)
		}
		if back, err = reblind(resp.Own, p.secret, "initiator: y chunk"); err != nil {
			return err
		}
		if err := keep(back); err != nil {
			return err
		}
	}
	if got != nY {
		return fmt.Errorf("psi: initiator: the %s sent %d elements, it announced %d", peer, got, nY)
	}
	return nil
}

// RunStreamUint64 runs the streamed protocol as the Initiator over call
// and returns the sorted intersection. ids must be free of duplicates (a
// duplicate is reported); they are read in place, never copied.
func RunStreamUint64(ids []uint64, opt StreamOptions, call func(*Request) (*Response, error)) ([]uint64, error) {
	return runInitiator(ids, opt, call, false)
}

// RunAlignUint64 is the initiator of either protocol, as the responder
// answers the hello: the two-party streamed protocol (RunStreamUint64)
// when it answers as a StreamResponder, the hub protocol (hub.go) when it
// answers as a Hub of several passive parties. Either way it returns the
// sorted intersection of every party's IDs.
func RunAlignUint64(ids []uint64, opt StreamOptions, call func(*Request) (*Response, error)) ([]uint64, error) {
	return runInitiator(ids, opt, call, true)
}

// runInitiator sends the hello and goes on with the protocol the answer
// names; hub allows the hub protocol.
func runInitiator(ids []uint64, opt StreamOptions, call func(*Request) (*Response, error), hub bool) ([]uint64, error) {
	p, err := newStreamParty(ids, opt)
	if err != nil {
		return nil, err
	}
	defer p.close()
	resp, err := call(&Request{Round: RoundStreamHello, Digest: binary.BigEndian.AppendUint64(nil, uint64(len(ids)))})
	if err != nil {
		return nil, fmt.Errorf("psi: hello: %w", err)
	}
	if resp == nil || (resp.Round != RoundStreamHello && (!hub || resp.Round != RoundHubHello)) || len(resp.Digest) != 8 {
		return nil, fmt.Errorf("psi: initiator: expected the answer to hello, got %s", describeResponse(resp))
	}
	nY := binary.BigEndian.Uint64(resp.Digest)
	if resp.Round == RoundHubHello {
		return runHub(p, nY, call)
	}
	return streamAfterHello(p, nY, call)
}

// streamAfterHello is the initiator of the streamed protocol after the
// hello, whose answer announced nY responder IDs.
func streamAfterHello(p *streamParty, nY uint64, call func(*Request) (*Response, error)) ([]uint64, error) {
	if err := p.openSpill(nY); err != nil {
		return nil, err
	}
	err := p.sendX(call, RoundStreamX, func(resp *Response, lo uint64, chunkIDs []uint64) error {
		if resp == nil || resp.Round != RoundStreamX || len(resp.Elements) != len(chunkIDs) {
			return fmt.Errorf("psi: initiator: x chunk at %d: expected %d elements back, got %s", lo, len(chunkIDs), describeResponse(resp))
		}
		for i, e := range resp.Elements {
			if err := ristretto255.NewElement().Decode(e); err != nil {
				return fmt.Errorf("psi: initiator: x chunk at %d: element %d (%d bytes): not a canonical ristretto255 encoding", lo, i, len(e))
			}
			if err := p.spill.add(tagMine, e, chunkIDs[i]); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	err = p.exchangeY(call, RoundStreamY, nY, "responder", func(back [][]byte) error {
		for _, e := range back {
			if err := p.spill.add(tagTheirs, e, 0); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	result, d, err := p.join("initiator")
	if err != nil {
		return nil, err
	}
	resp, err := call(&Request{Round: RoundStreamFinish, Digest: d})
	if err != nil {
		return nil, fmt.Errorf("psi: finish: %w", err)
	}
	if resp == nil || resp.Round != RoundStreamFinish {
		return nil, fmt.Errorf("psi: initiator: expected the answer to finish, got %s", describeResponse(resp))
	}
	if !bytes.Equal(resp.Digest, d) {
		return nil, errors.New("psi: initiator: the responder's intersection digest differs from ours: the parties disagree on the intersection")
	}
	return result, nil
}

// StreamResponder is the answering role of the streamed protocol.
type StreamResponder struct {
	mu sync.Mutex
	answerer
	state  int // 0 new, 1 hello answered, 2 done
	result []uint64
	err    error
}

// answerer is the answering side's state of the streamed exchange, shared
// by StreamResponder and each passive's slot of a Hub.
type answerer struct {
	p       *streamParty
	who     string // names the side in errors: "responder", "hub"
	nX      uint64
	gotX    uint64
	sentY   uint64   // own elements sent so far
	pending []uint64 // IDs of the last y chunk sent, awaiting their reblinded elements
	out     [][]byte
}

// hello takes the initiator's set size and opens the spill files.
func (a *answerer) hello(req *Request) error {
	if len(req.Digest) != 8 {
		return fmt.Errorf("psi: %s: hello without the initiator's set size", a.who)
	}
	a.nX = binary.BigEndian.Uint64(req.Digest)
	return a.p.openSpill(a.nX)
}

// takeX reblinds an x chunk, spills it, and returns the reblinded
// elements.
func (a *answerer) takeX(req *Request) ([][]byte, error) {
	a.gotX += uint64(len(req.Elements))
	if a.gotX > a.nX {
		return nil, fmt.Errorf("psi: %s: the initiator sent more than the %d elements it announced", a.who, a.nX)
	}
	doubly, err := reblind(req.Elements, a.p.secret, a.who+": x chunk")
	if err != nil {
		return nil, err
	}
	for _, e := range doubly {
		if err := a.p.spill.add(tagTheirs, e, 0); err != nil {
			return nil, err
		}
	}
	return doubly, nil
}

// nextY spills the reblinded previous y chunk and returns the next one
// (empty when all are sent).
func (a *answerer) nextY(req *Request) ([][]byte, error) {
	if a.gotX != a.nX {
		return nil, fmt.Errorf("psi: %s: y chunks requested after %d of the %d announced x elements", a.who, a.gotX, a.nX)
	}
	if len(req.Elements) != len(a.pending) {
		return nil, fmt.Errorf("psi: %s: %d elements came back for a y chunk of %d", a.who, len(req.Elements), len(a.pending))
	}
	for i, e := range req.Elements {
		if err := ristretto255.NewElement().Decode(e); err != nil {
			return nil, fmt.Errorf("psi: %s: returned y chunk: element %d (%d bytes): not a canonical ristretto255 encoding", a.who, i, len(e))
		}
		if err := a.p.spill.add(tagMine, e, a.pending[i]); err != nil {
			return nil, err
		}
	}
	n := uint64(len(a.p.ids))
	lo := a.sentY
	hi := min(lo+uint64(a.p.opt.Chunk), n)
	if a.out == nil {
		a.out = make([][]byte, a.p.opt.Chunk)
		for i := range a.out {
			a.out[i] = make([]byte, 0, ElementSize)
		}
		a.pending = make([]uint64, 0, a.p.opt.Chunk)
	}
	a.pending = a.pending[:hi-lo]
	a.p.blindChunk(lo, hi, a.out, a.pending)
	a.sentY = hi
	return a.out[:hi-lo], nil
}

// allBack reports whether every element was exchanged both ways.
func (a *answerer) allBack() bool {
	return a.gotX == a.nX && a.sentY == uint64(len(a.p.ids)) && len(a.pending) == 0
}

// NewStreamResponder prepares the Responder for ids (free of duplicates;
// read in place).
func NewStreamResponder(ids []uint64, opt StreamOptions) (*StreamResponder, error) {
	p, err := newStreamParty(ids, opt)
	if err != nil {
		return nil, err
	}
	return &StreamResponder{answerer: answerer{p: p, who: "responder"}}, nil
}

// Handle answers one request of the streamed protocol; after an error it
// refuses every later request. Spill files are removed when the protocol
// ends or fails (or by Close).
func (r *StreamResponder) Handle(req *Request) (*Response, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err != nil {
		return nil, fmt.Errorf("psi: responder: an earlier request failed: %w", r.err)
	}
	resp, err := r.handle(req)
	if err != nil {
		r.err = err
		r.p.close()
		return nil, err
	}
	return resp, nil
}

func (r *StreamResponder) handle(req *Request) (*Response, error) {
	if req == nil {
		return nil, errors.New("psi: responder: nil request")
	}
	switch {
	case req.Round == RoundStreamHello && r.state == 0:
		if err := r.hello(req); err != nil {
			return nil, err
		}
		r.state = 1
		return &Response{Round: RoundStreamHello, Digest: binary.BigEndian.AppendUint64(nil, uint64(len(r.p.ids)))}, nil
	case req.Round == RoundStreamX && r.state == 1:
		doubly, err := r.takeX(req)
		if err != nil {
			return nil, err
		}
		return &Response{Round: RoundStreamX, Elements: doubly}, nil
	case req.Round == RoundStreamY && r.state == 1:
		own, err := r.nextY(req)
		if err != nil {
			return nil, err
		}
		return &Response{Round: RoundStreamY, Own: own}, nil
	case req.Round == RoundStreamFinish && r.state == 1:
		if !r.allBack() {
			return nil, fmt.Errorf("psi: responder: finish before all %d own elements came back", len(r.p.ids))
		}
		result, d, err := r.p.join("responder")
		if err != nil {
			return nil, err
		}
		if !bytes.Equal(d, req.Digest) {
			return nil, errors.New("psi: responder: the initiator's intersection digest differs from ours: the parties disagree on the intersection")
		}
		r.result = result
		r.state = 2
		if err := r.p.close(); err != nil {
			return nil, err
		}
		return &Response{Round: RoundStreamFinish, Digest: d}, nil
	}
	return nil, fmt.Errorf("psi: responder: unexpected round %d in state %d", req.Round, r.state)
}

// Intersection returns the sorted intersection once finish was answered.
func (r *StreamResponder) Intersection() ([]uint64, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.state != 2 {
		return nil, errors.New("psi: responder: the protocol has not finished")
	}
	return r.result, nil
}

// Close removes the spill files of an unfinished protocol.
func (r *StreamResponder) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.p.close()
}

// spill is P partition files written through small buffers.
type spill struct {
	dir   string
	bits  int // partition = the element's 15 leading bits >> (15 - bits)
	files []*os.File
	bufs  []*bufio.Writer
	rec   [recordSize]byte
}

func newSpill(parent string, parts int) (*spill, error) {
	b := bits.Len(uint(parts - 1)) // partitions rounded up to a power of two
	dir, err := os.MkdirTemp(parent, "splitguard-psi-")
	if err != nil {
		return nil, fmt.Errorf("psi: spill directory: %w", err)
	}
	s := &spill{dir: dir, bits: b}
	for i := 0; i < 1<<b; i++ {
		f, err := os.Create(s.path(i))
		if err != nil {
			s.close()
			return nil, fmt.Errorf("psi: spill file: %w", err)
		}
		s.files = append(s.files, f)
		s.bufs = append(s.bufs, bufio.NewWriterSize(f, 8<<10))
	}
	return s, nil
}

func (s *spill) path(i int) string { return filepath.Join(s.dir, fmt.Sprintf("%04d", i)) }

// add appends a record to the partition of e. A canonical ristretto255
// encoding has its first byte's lowest bit clear, so the 15 bits that
// order encodings are the first byte's top 7 and the second byte.
func (s *spill) add(tag byte, e []byte, id uint64) error {
	lead := uint(e[0]>>1)<<8 | uint(e[1])
	part := lead >> (15 - s.bits)
	s.rec[0] = tag
	copy(s.rec[1:], e)
	binary.BigEndian.PutUint64(s.rec[1+ElementSize:], id)
	if _, err := s.bufs[part].Write(s.rec[:]); err != nil {
		return fmt.Errorf("psi: writing spill partition %d: %w", part, err)
	}
	return nil
}

func (s *spill) flush() error {
	for i, b := range s.bufs {
		if err := b.Flush(); err != nil {
			return fmt.Errorf("psi: writing spill partition %d: %w", i, err)
		}
	}
	return nil
}

func (s *spill) close() error {
	if s == nil || s.dir == "" {
		return nil
	}
	for _, f := range s.files {
		f.Close()
	}
	err := os.RemoveAll(s.dir)
	s.dir = ""
	return err
}

// feistel is a keyed pseudo-random permutation of [0, n): a four-round
// balanced Feistel network on the smallest even number of bits covering n,
// with SHA-256 as round function, and cycle walking into [0, n).
type feistel struct {
	n    uint64
	half uint
	key  [32]byte
}

func newFeistel(n uint64, key [32]byte) *feistel {
	b := uint(bits.Len64(max(n, 2) - 1))
	b += b & 1
	return &feistel{n: n, half: b / 2, key: key}
}

func (f *feistel) round(r int, x uint64) uint64 {
	var buf [32 + 1 + 8]byte
	copy(buf[:], f.key[:])
	buf[32] = byte(r)
	binary.BigEndian.PutUint64(buf[33:], x)
	sum := sha256.Sum256(buf[:])
	return binary.BigEndian.Uint64(sum[:8]) & (1<<f.half - 1)
}

// apply maps i < n to its image under the permutation.
func (f *feistel) apply(i uint64) uint64 {
	mask := uint64(1)<<f.half - 1
	x := i
	for {
		l, r := x>>f.half, x&mask
		for k := 0; k < 4; k++ {
			l, r = r, l^f.round(k, r)
		}
		x = l<<f.half | r
		if x < f.n {
			return x
		}
	}
}
