package transport

import (
	"fmt"
	"strings"

	"github.com/splitguard/splitguard/tensor"
	"github.com/splitguard/splitguard/transport/wire"
)

// The control plane: what the parties say about themselves and the run
// around the training messages (Hello and its fingerprint, inference
// batches and their answers). Every implementation that connects two
// processes carries these; transport/grpcnet encodes them in its protocol
// buffers.

// ProtocolVersion is the protocol version exchanged in Hello: 2 since the
// ID alignment runs the streamed PSI (psi.RunStreamUint64), which version
// 1 peers do not speak.
const ProtocolVersion = 2

// MaxHolds is the most held checkpoints a resume may list (the steps of
// the checkpoints a passive party holds intact).
const MaxHolds = 64

// Fingerprint is the part of the configuration both parties must agree on
// before training.
type Fingerprint struct {
	CutDim         int    // width d of the cut layer
	BatchSize      int    // batch size B
	Seed           uint64 // seed of the shared schedule
	Epochs         int    // training epochs
	ScheduleLength int64  // training steps in the schedule
	// Digest is an optional digest of further shared settings, compared
	// byte for byte.
	Digest []byte
	// Wire are the encodings of the training messages' tensors: the
	// passive sends embeddings in Wire.Embedding, the active gradients in
	// Wire.Gradient, and each refuses a tensor in another encoding or
	// compressed otherwise than Wire.Compression allows.
	Wire wire.Encodings
}

// Diff describes how f differs from o field by field ("" when they agree).
func (f Fingerprint) Diff(o Fingerprint) string {
	var d []string
	add := func(name string, a, b any) {
		if a != b {
			d = append(d, fmt.Sprintf("%s %v ≠ %v", name, a, b))
		}
	}
	add("cut dim", f.CutDim, o.CutDim)
	add("batch size", f.BatchSize, o.BatchSize)
	add("seed", f.Seed, o.Seed)
	add("epochs", f.Epochs, o.Epochs)
	add("schedule length", f.ScheduleLength, o.ScheduleLength)
	add("digest", fmt.Sprintf("%x", f.Digest), fmt.Sprintf("%x", o.Digest))
	add("wire encoding of embeddings (key wire_embedding)", f.Wire.Embedding, o.Wire.Embedding)
	add("wire encoding of gradients (key wire_gradient)", f.Wire.Gradient, o.Wire.Gradient)
	add("wire compression (key wire_compression)", f.Wire.Compression, o.Wire.Compression)
	return strings.Join(d, ", ")
}

// DiffKeys returns the configuration keys that alone set a field in which f
// and o differ, as Diff names them ("key wire_embedding"): the wire
// encodings and their compression. The other fields follow from several
// keys (the digest, the schedule), which Diff names in words.
func (f Fingerprint) DiffKeys(o Fingerprint) []string {
	var keys []string
	if f.Wire.Embedding != o.Wire.Embedding {
		keys = append(keys, "wire_embedding")
	}
	if f.Wire.Gradient != o.Wire.Gradient {
		keys = append(keys, "wire_gradient")
	}
	if f.Wire.Compression != o.Wire.Compression {
		keys = append(keys, "wire_compression")
	}
	return keys
}

// Hello is what a party says about itself at the start of a run.
type Hello struct {
	Version uint32 // ProtocolVersion when zero in a local Hello
	Party   string
	Config  Fingerprint
	// IDFormat says how the party's example IDs are written (see
	// data.IDFormat); it does not take part in Mismatch: it only names
	// the likely cause of an empty intersection.
	IDFormat string
}

// Mismatch reports why two Hellos cannot run together ("" when they can):
// another protocol version or another fingerprint.
func (h Hello) Mismatch(peer Hello) string {
	if h.Version != peer.Version {
		return fmt.Sprintf("protocol version %d ≠ %d", h.Version, peer.Version)
	}
	if d := h.Config.Diff(peer.Config); d != "" {
		return "config fingerprint differs: " + d
	}
	return ""
}

// MismatchKeys returns the configuration keys Mismatch names ("key
// wire_gradient"): none when the protocol versions differ, else the
// fingerprints' DiffKeys.
func (h Hello) MismatchKeys(peer Hello) []string {
	if h.Version != peer.Version {
		return nil
	}
	return h.Config.DiffKeys(peer.Config)
}

// WithDefaults returns h with Version ProtocolVersion where it is zero.
func (h Hello) WithDefaults() Hello {
	if h.Version == 0 {
		h.Version = ProtocolVersion
	}
	return h
}

// ScoreBatch is one batch of cut-layer embeddings the passive party asks
// the active party to score (inference). Batches are numbered 0, 1, …
// within a session (from the last successful Hello).
type ScoreBatch struct {
	Batch     int
	Last      bool     // the session's final batch
	IDs       []uint64 // one per embedding row
	Embedding *tensor.Matrix
}

// ScoreResult answers a ScoreBatch: the number of rows scored and, only
// when the active party shares its scores, one probability per row.
type ScoreResult struct {
	Batch  int
	Scored int
	Scores []float32 // nil unless shared
}
