// Package grpcnet connects the two parties of a split-learning run across
// processes: gRPC (service splitguard.v1.SplitLearning, proto/splitguard.proto)
// over mutual TLS. The active party runs a Server (a transport.ActiveConn),
// the passive party a Client (a transport.PassiveConn).
//
// # Security
//
// Mutual TLS is always on: both options structs take a *tls.Config, normally
// from pki.ServerTLSConfig / pki.ClientTLSConfig, which pin the peer's
// party name. Plaintext exists only for tests and demos on one machine: the
// InsecureLoopback option, which refuses (with an error) any address that is
// not a loopback address.
//
// # Sessions
//
// A successful Hello opens a session: the server sends a random token in
// the Hello response's header (SessionHeader), and every later call must
// carry it, or it is refused (a second process holding the passive's
// certificate can neither checkpoint, train nor shut down). A second Hello
// is refused with codes.Aborted while the session is live; the rule is in
// session.go.
//
// # The Train stream and retries
//
// All batches of a run travel over one bidirectional stream, lock-step: the
// passive sends a Forward and waits for its Backward before sending the next.
// Evaluation batches use the same stream (phase Eval) and are answered with
// an empty Backward (no gradient); there is no separate Evaluate call, so no
// message could carry predictions to the passive.
//
// Messages are ordered by the key (Step, phase, Batch), with an Eval batch
// of step S (S training steps done) before the Train batch of step S. The
// Server remembers the key, a checksum and the answer of the last message:
//
//   - a Forward with a larger key is new: it is handed to Recv, and the
//     answer given to Reply is sent back and remembered;
//   - a Forward with the same key and content is a retry (the passive lost the
//     connection or timed out while the step was in flight): it is answered
//     with the remembered answer, waiting for it if Reply has not been called
//     yet, and is NOT handed to Recv again, so the active never applies a step
//     twice;
//   - the same key with different content, or a smaller key (a replayed old
//     step), is refused with a gRPC status error and the stream ends; the
//     Server keeps serving and the passive may open a new stream.
//
// Consequently one evaluation round per step count: two rounds at the same
// Step (which would score the same parameters twice) are refused as a replay.
//
// The Client gives every exchange a timeout; on a transient failure
// (codes.Unavailable, Aborted, a timeout or a broken stream) it waits with
// exponential backoff, opens a new stream and re-sends the same Forward. Any
// other error (a refused message, a failed validation) is returned at once.
//
// # Validation
//
// Both ends check every message they receive before handing it on: phase,
// non-negative step and batch, a tensor in the encoding agreed at Hello
// (Fingerprint.Wire; package transport/wire), compressed only when Hello
// agreed on zstd and then within the bounds of compress.go, whose
// rows×cols matches its data, dense or sparse, one
// ID per embedding row, a gradient answering the step and batch sent with
// the embedding's shape, only finite numbers, and a bound on the message size
// (MaxMessageBytes, enforced by gRPC too). The party layer adds the checks
// that need the schedule (transport.ValidateForward / ValidateBackward).
//
// # Counters
//
// Stats reports the bytes and messages each side sent and received (gRPC
// messages including their 5-byte frame header; HTTP/2 and TLS framing are not
// counted), the retries and the refused messages, for the metrics layer.
package grpcnet

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/maphash"
	"math"
	"net"
	"sync/atomic"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/splitguard/splitguard/proto/splitguardpb"
	"github.com/splitguard/splitguard/tensor"
	"github.com/splitguard/splitguard/transport"
	"github.com/splitguard/splitguard/transport/wire"
)

// ProtocolVersion is the protocol version exchanged in Hello
// (transport.ProtocolVersion).
const ProtocolVersion = transport.ProtocolVersion

// DefaultMaxMessageBytes bounds one gRPC message when the options leave it 0.
const DefaultMaxMessageBytes = 64 << 20

// Fingerprint is the configuration both parties must agree on
// (transport.Fingerprint; an alias, so that grpcnet's callers read as
// before).
type Fingerprint = transport.Fingerprint

// Hello is what a party says about itself at the start of a run
// (transport.Hello; an alias).
type Hello = transport.Hello

// fingerprintToPB encodes f in the Hello messages.
func fingerprintToPB(f Fingerprint) (*pb.ConfigFingerprint, error) {
	if f.CutDim < 0 || f.BatchSize < 0 || f.Epochs < 0 || f.ScheduleLength < 0 ||
		f.CutDim > math.MaxUint32 || f.BatchSize > math.MaxUint32 || f.Epochs > math.MaxUint32 ||
		!f.Wire.Embedding.Valid() || !f.Wire.Gradient.Valid() || !f.Wire.Compression.Valid() {
		return nil, fmt.Errorf("grpcnet: config fingerprint out of range: %+v", f)
	}
	return &pb.ConfigFingerprint{CutDim: uint32(f.CutDim), BatchSize: uint32(f.BatchSize), Seed: f.Seed,
		Epochs: uint32(f.Epochs), ScheduleLength: uint64(f.ScheduleLength), Digest: f.Digest,
		WireEmbedding: pb.Encoding(f.Wire.Embedding), WireGradient: pb.Encoding(f.Wire.Gradient),
		WireCompression: pb.Compression(f.Wire.Compression)}, nil
}

func fingerprintFromPB(p *pb.ConfigFingerprint) Fingerprint {
	if p == nil {
		return Fingerprint{}
	}
	return Fingerprint{CutDim: int(p.GetCutDim()), BatchSize: int(p.GetBatchSize()), Seed: p.GetSeed(),
		Epochs: int(p.GetEpochs()), ScheduleLength: int64(min(p.GetScheduleLength(), math.MaxInt64)), Digest: p.GetDigest(),
		Wire: wire.Encodings{Embedding: encodingFromPB(p.GetWireEmbedding()), Gradient: encodingFromPB(p.GetWireGradient()),
			Compression: compressionFromPB(p.GetWireCompression())}}
}

// encodingFromPB converts a wire encoding; an unknown number stays
// unknown (not Valid), so that it differs from every encoding.
func encodingFromPB(e pb.Encoding) wire.Encoding { return enumFromPB[wire.Encoding](e) }

// compressionFromPB converts a compression, as encodingFromPB does.
func compressionFromPB(c pb.Compression) wire.Compression { return enumFromPB[wire.Compression](c) }

// enumFromPB converts a proto enum number to package wire's byte-sized
// enum: a number outside 0…255, negative ones included, becomes 255,
// which no wire enum defines, rather than wrapping onto a defined one.
func enumFromPB[W ~uint8, P ~int32](p P) W {
	if p < 0 || p > math.MaxUint8 {
		return W(math.MaxUint8)
	}
	return W(p)
}

// Stats are a side's traffic counters since it started.
type Stats struct {
	BytesSent, BytesReceived       int64 // gRPC message bytes incl. frame headers
	MessagesSent, MessagesReceived int64 // gRPC messages (all calls)
	Exchanges                      int64 // Forward/Backward exchanges completed
	Retries                        int64 // re-sent Forwards (client) or answered retries (server)
	Rejected                       int64 // messages refused by validation or ordering
}

type counters struct {
	bytesSent, bytesRecv, msgsSent, msgsRecv, exchanges, retries, rejected atomic.Int64
}

func (c *counters) snapshot() Stats {
	return Stats{
		BytesSent: c.bytesSent.Load(), BytesReceived: c.bytesRecv.Load(),
		MessagesSent: c.msgsSent.Load(), MessagesReceived: c.msgsRecv.Load(),
		Exchanges: c.exchanges.Load(), Retries: c.retries.Load(), Rejected: c.rejected.Load(),
	}
}

// CheckLoopback returns an error unless addr ("host:port") names a loopback
// address: "localhost" or a literal IP in 127.0.0.0/8 or ::1.
func CheckLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("grpcnet: address %q: %w", addr, err)
	}
	if host == "localhost" {
		return nil
	}
	ip := net.ParseIP(host)
	if ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("grpcnet: InsecureLoopback refuses address %q: plaintext is only allowed on a loopback address (127.0.0.1, ::1, localhost); use mutual TLS", addr)
	}
	return nil
}

// phaseToPB and phaseFromPB convert the message phase.
func phaseToPB(p transport.Phase) (pb.Phase, error) {
	switch p {
	case transport.Train:
		return pb.Phase_PHASE_TRAIN, nil
	case transport.Eval:
		return pb.Phase_PHASE_EVAL, nil
	}
	return 0, fmt.Errorf("grpcnet: invalid phase %v", p)
}

func phaseFromPB(p pb.Phase) (transport.Phase, error) {
	switch p {
	case pb.Phase_PHASE_TRAIN:
		return transport.Train, nil
	case pb.Phase_PHASE_EVAL:
		return transport.Eval, nil
	}
	return 0, fmt.Errorf("invalid phase %v", p)
}

// encodeTensor writes m in encoding enc: sparse when that is smaller
// (wire.Encoding.PackSparse: mostly +0, as the sparsify and dsgd
// protections leave a gradient), else float32 as little-endian bytes in
// le_f32 and any other encoding packed (wire.Encoding.Pack). Both refuse
// values enc does not hold (the parties round before sending). With comp
// wire.Zstd the packed bytes are then compressed when that makes them
// smaller (compress.go).
func encodeTensor(m *tensor.Matrix, enc wire.Encoding, comp wire.Compression) (*pb.Tensor, error) {
	if m.Rows < 0 || m.Cols < 0 || m.Rows > math.MaxUint32 || m.Cols > math.MaxUint32 || len(m.Data) != m.Rows*m.Cols {
		return nil, fmt.Errorf("grpcnet: matrix %d×%d with %d values", m.Rows, m.Cols, len(m.Data))
	}
	if comp != wire.Zstd { // the packed bytes are sent: fresh buffers
		t, _, _, err := packTensor(m, enc, nil, nil)
		return t, err
	}
	s := scratchPool.Get().(*scratch) // they are compressed: reused buffers
	defer scratchPool.Put(s)
	t, a, b, err := packTensor(m, enc, s.a[:0], s.b[:0])
	s.a, s.b = a, b
	if err != nil {
		return nil, err
	}
	if err := compressTensor(t); err != nil {
		return nil, err
	}
	return t, nil
}

// packTensor packs m as encodeTensor describes, appending to a (the
// values; a new buffer of the packed size when nil) and b (a sparse
// index), and returns the tensor and both buffers.
func packTensor(m *tensor.Matrix, enc wire.Encoding, a, b []byte) (*pb.Tensor, []byte, []byte, error) {
	t := &pb.Tensor{Rows: uint32(m.Rows), Cols: uint32(m.Cols)}
	if n := enc.SparseSize(m); n >= 0 && n < enc.Size(m.Rows, m.Cols) {
		vals, index, err := enc.PackSparse(a, b, m)
		if err != nil {
			return nil, a, b, err
		}
		t.Encoding, t.Packed, t.Sparse, t.Index = pb.Encoding(enc), vals, true, index
		return t, vals, index, nil
	}
	if a == nil {
		a = make([]byte, 0, enc.Size(m.Rows, m.Cols))
	}
	buf, err := enc.Pack(a, m)
	if err != nil {
		return nil, a, b, err
	}
	if enc == wire.F32 {
		t.LeF32 = buf
	} else {
		t.Encoding, t.Packed = pb.Encoding(enc), buf
	}
	return t, buf, b, nil
}

// decodeTensor checks and decodes a wire tensor of at most maxValues
// numbers, in encoding want and compressed at most as comp allows (both
// agreed at Hello); what names it in errors.
func decodeTensor(t *pb.Tensor, maxValues int, what string, want wire.Encoding, comp wire.Compression) (*tensor.Matrix, error) {
	if t == nil {
		return nil, fmt.Errorf("%s: missing", what)
	}
	rows, cols := uint64(t.GetRows()), uint64(t.GetCols())
	n := rows * cols // cannot overflow: both < 2^32
	if n > uint64(maxValues) {
		return nil, fmt.Errorf("%s: %d×%d exceeds the limit of %d values", what, rows, cols, maxValues)
	}
	enc := encodingFromPB(t.GetEncoding())
	if !enc.Valid() {
		return nil, fmt.Errorf("%s: unknown encoding %d", what, t.GetEncoding())
	}
	if enc != want {
		return nil, fmt.Errorf("%s: encoding %v, the session agreed on %v", what, enc, want)
	}
	raw, packed, index, err := decompressTensor(t, enc, comp)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	vals := t.GetValues()
	if t.GetSparse() {
		if len(vals) > 0 || len(raw) > 0 {
			return nil, fmt.Errorf("%s: sparse with values or le_f32 set", what)
		}
		m, err := enc.UnpackSparse(nil, int(rows), int(cols), packed, index)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		if err := tensor.CheckFinite(what, m); err != nil {
			return nil, err
		}
		return m, nil
	}
	if len(index) > 0 {
		return nil, fmt.Errorf("%s: an index without sparse set", what)
	}
	if enc != wire.F32 {
		if len(vals) > 0 || len(raw) > 0 {
			return nil, fmt.Errorf("%s: encoding %v with values or le_f32 set", what, enc)
		}
		m, err := enc.Unpack(nil, int(rows), int(cols), packed)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		if err := tensor.CheckFinite(what, m); err != nil {
			return nil, err
		}
		return m, nil
	}
	if len(packed) > 0 {
		return nil, fmt.Errorf("%s: encoding f32 with packed set", what)
	}
	if len(vals) > 0 && len(raw) > 0 {
		return nil, fmt.Errorf("%s: both values and le_f32 are set", what)
	}
	m := tensor.New(int(rows), int(cols))
	switch {
	case len(raw) > 0 || (len(vals) == 0 && n > 0):
		if uint64(len(raw)) != 4*n {
			return nil, fmt.Errorf("%s: shape %d×%d needs %d bytes of float32 data, got %d", what, rows, cols, 4*n, len(raw))
		}
		for i := range m.Data {
			m.Data[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
		}
	default:
		if uint64(len(vals)) != n {
			return nil, fmt.Errorf("%s: shape %d×%d needs %d values, got %d", what, rows, cols, n, len(vals))
		}
		copy(m.Data, vals)
	}
	if err := tensor.CheckFinite(what, m); err != nil {
		return nil, err
	}
	return m, nil
}

// encodeForward converts and checks an outgoing Forward, its embedding in
// encoding enc and compressed with comp.
func encodeForward(f *transport.Forward, enc wire.Encoding, comp wire.Compression) (*pb.Forward, error) {
	if f == nil || f.Embedding == nil {
		return nil, errors.New("grpcnet: forward message without an embedding")
	}
	ph, err := phaseToPB(f.Phase)
	if err != nil {
		return nil, err
	}
	if len(f.IDs) != f.Embedding.Rows {
		return nil, fmt.Errorf("grpcnet: %v step %d batch %d: %d IDs for %d embedding rows", f.Phase, f.Step, f.Batch, len(f.IDs), f.Embedding.Rows)
	}
	emb, err := encodeTensor(f.Embedding, enc, comp)
	if err != nil {
		return nil, fmt.Errorf("grpcnet: %v step %d batch %d: embedding: %w", f.Phase, f.Step, f.Batch, err)
	}
	return &pb.Forward{Phase: ph, Step: f.Step, Epoch: int64(f.Epoch), Batch: int64(f.Batch), Last: f.Last, Ids: f.IDs, Embedding: emb}, nil
}

// decodeForward checks and converts an incoming Forward whose embedding
// must be in encoding want, compressed at most with comp.
func decodeForward(m *pb.Forward, maxValues int, want wire.Encoding, comp wire.Compression) (*transport.Forward, error) {
	ph, err := phaseFromPB(m.GetPhase())
	if err != nil {
		return nil, fmt.Errorf("forward step %d batch %d: %w", m.GetStep(), m.GetBatch(), err)
	}
	where := fmt.Sprintf("%v step %d epoch %d batch %d", ph, m.GetStep(), m.GetEpoch(), m.GetBatch())
	if m.GetStep() < 0 || m.GetEpoch() < 0 || m.GetBatch() < 0 || m.GetEpoch() > math.MaxInt32 || m.GetBatch() > math.MaxInt32 {
		return nil, fmt.Errorf("%s: step, epoch and batch must be non-negative (and epoch, batch < 2^31)", where)
	}
	emb, err := decodeTensor(m.GetEmbedding(), maxValues, where+": embedding", want, comp)
	if err != nil {
		return nil, err
	}
	if emb.Rows == 0 || emb.Cols == 0 {
		return nil, fmt.Errorf("%s: empty embedding %d×%d", where, emb.Rows, emb.Cols)
	}
	if len(m.GetIds()) != emb.Rows {
		return nil, fmt.Errorf("%s: %d example IDs for %d embedding rows", where, len(m.GetIds()), emb.Rows)
	}
	return &transport.Forward{Phase: ph, Step: m.GetStep(), Epoch: int(m.GetEpoch()), Batch: int(m.GetBatch()),
		Last: m.GetLast(), IDs: m.GetIds(), Embedding: emb}, nil
}

// decodeBackward checks the answer to f, whose gradient must be in
// encoding want, compressed at most with comp, and converts it.
func decodeBackward(m *pb.Backward, f *transport.Forward, maxValues int, want wire.Encoding, comp wire.Compression) (*transport.Backward, error) {
	if m.GetStep() != f.Step || m.GetBatch() != int64(f.Batch) {
		return nil, fmt.Errorf("answer for step %d batch %d, sent step %d batch %d", m.GetStep(), m.GetBatch(), f.Step, f.Batch)
	}
	b := &transport.Backward{Step: f.Step, Batch: f.Batch, Keep: m.GetKeep(), Stop: m.GetStop()}
	if err := transport.CheckVerdict(f, b); err != nil {
		return nil, err
	}
	where := fmt.Sprintf("%v step %d batch %d: gradient", f.Phase, f.Step, f.Batch)
	if f.Phase == transport.Eval {
		if m.GetGrad() != nil {
			return nil, fmt.Errorf("%s: an evaluation batch must be answered without a gradient", where)
		}
		return b, nil
	}
	g, err := decodeTensor(m.GetGrad(), maxValues, where, want, comp)
	if err != nil {
		return nil, err
	}
	if !tensor.SameShape(g, f.Embedding) {
		return nil, fmt.Errorf("%s: shape %d×%d, the embedding sent was %d×%d", where, g.Rows, g.Cols, f.Embedding.Rows, f.Embedding.Cols)
	}
	b.Grad = g
	return b, nil
}

// checksum identifies a Forward's content within one process.
func checksum(seed maphash.Seed, m *pb.Forward) uint64 {
	var h maphash.Hash
	h.SetSeed(seed)
	var buf [8]byte
	for _, v := range []uint64{uint64(m.GetPhase()), uint64(m.GetStep()), uint64(m.GetEpoch()), uint64(m.GetBatch()),
		uint64(m.GetEmbedding().GetRows()), uint64(m.GetEmbedding().GetCols()), uint64(m.GetEmbedding().GetEncoding()),
		uint64(m.GetEmbedding().GetCompression())} {
		binary.LittleEndian.PutUint64(buf[:], v)
		h.Write(buf[:])
	}
	if m.GetLast() {
		h.WriteByte(1)
	} else {
		h.WriteByte(0)
	}
	for _, id := range m.GetIds() {
		binary.LittleEndian.PutUint64(buf[:], id)
		h.Write(buf[:])
	}
	h.Write(m.GetEmbedding().GetLeF32())
	binary.LittleEndian.PutUint64(buf[:], uint64(len(m.GetEmbedding().GetPacked())))
	h.Write(buf[:])
	h.Write(m.GetEmbedding().GetPacked())
	if m.GetEmbedding().GetSparse() {
		h.WriteByte(1)
	} else {
		h.WriteByte(0)
	}
	h.Write(m.GetEmbedding().GetIndex()) // its length follows from the values'
	for _, v := range m.GetEmbedding().GetValues() {
		binary.LittleEndian.PutUint32(buf[:4], math.Float32bits(v))
		h.Write(buf[:4])
	}
	return h.Sum64()
}

// statusf returns a gRPC status error; code says how the peer should react
// (InvalidArgument and FailedPrecondition are not retried).
func statusf(code codes.Code, format string, args ...any) error {
	return status.Errorf(code, "grpcnet: "+format, args...)
}

// toStatus turns a handler's error into a gRPC status error with the given
// code unless it already is one.
// TryAgainLater marks a handler's refusal as temporary: the client sees
// it as a lost session (NeedsNewSession) and tries again after its backoff.
func TryAgainLater(err error) error {
	return status.Error(codes.Unavailable, err.Error())
}

func toStatus(err error, code codes.Code, what string) error {
	if _, ok := status.FromError(err); ok {
		return err
	}
	return status.Errorf(code, "grpcnet: %s: %v", what, err)
}

func shapeOf(m *tensor.Matrix) string {
	if m == nil {
		return "none"
	}
	return fmt.Sprintf("%d×%d", m.Rows, m.Cols)
}
