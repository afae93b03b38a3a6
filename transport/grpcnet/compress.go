package grpcnet

import (
	"errors"
	"fmt"
	"sync"

	"github.com/klauspost/compress/zstd"

	pb "github.com/splitguard/splitguard/proto/splitguardpb"
	"github.com/splitguard/splitguard/transport/wire"
)

// Compression of the Train stream's tensors (wire.Compression, agreed at
// Hello): with wire.Zstd, encodeTensor packs a tensor as without it, then
// replaces each non-empty bytes field (le_f32, packed, index) by one zstd
// frame (github.com/klauspost/compress/zstd, SpeedFastest with every
// literal block entropy-coded: see zstdCodecs) and marks the
// tensor COMPRESSION_ZSTD, unless the frames together are not smaller than
// the packed bytes: the tensor then goes as packed (COMPRESSION_NONE), so
// that incompressible values cost nothing. Score requests are never
// compressed.
//
// decodeTensor refuses a compressed tensor in a session that did not agree
// on zstd, and bounds what a frame may decode to before allocating: each
// frame must declare its content size, which may not
// exceed the dense packing of the tensor's shape (wire.Encoding.Size, the
// most any of its fields holds: a sparse packing is sent only when it is
// smaller), and DecodeAll decodes into a buffer of exactly that capacity,
// refusing more. Frames must also be single-segment (encodeTensor's are:
// WithSingleSegment), whose window is the content itself, so that a frame
// cannot ask the decoder for a history beyond the bound either.

var (
	zstdOnce sync.Once
	zstdEnc  *zstd.Encoder
	zstdDec  *zstd.Decoder
	zstdErr  error

	// scratchPool holds the buffers a tensor is packed into before it is
	// compressed.
	scratchPool = sync.Pool{New: func() any { return new(scratch) }}
)

// scratch is a pair of packing buffers (values or dense bytes, index).
type scratch struct{ a, b []byte }

// zstdCodecs returns the process's zstd encoder and decoder. The encoder
// runs at SpeedFastest with WithAllLitEntropyCompression: an int4 or int8
// embedding's gain is almost all in the entropy of its codes (few repeated
// strings), which SpeedFastest alone leaves uncoded (a 1024 × 128 int4
// embedding of a real run stayed at 1.00 of its size) and SpeedDefault
// finds at six to eight times the processor time (0.61 against 0.64 of the
// size, 0.54–0.79 ms against 0.09 ms on the 2-core reference machine);
// gradients, whose rows repeat, compress alike at either level (0.34 and
// 0.38, 0.2 ms). Both are safe
// for concurrent use: the encoder runs one compression at a time
// (WithEncoderConcurrency(1); others wait), the decoder as many as there
// are CPUs.
func zstdCodecs() (*zstd.Encoder, *zstd.Decoder, error) {
	zstdOnce.Do(func() {
		zstdEnc, zstdErr = zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithAllLitEntropyCompression(true),
			zstd.WithEncoderConcurrency(1), zstd.WithSingleSegment(true))
		if zstdErr != nil {
			return
		}
		zstdDec, zstdErr = zstd.NewReader(nil, zstd.WithDecodeAllCapLimit(true))
	})
	return zstdEnc, zstdDec, zstdErr
}

// compressTensor replaces t's non-empty bytes fields, which may lie in
// reused buffers, by their zstd frames when these are smaller in total,
// else by copies of themselves.
func compressTensor(t *pb.Tensor) error {
	enc, _, err := zstdCodecs()
	if err != nil {
		return fmt.Errorf("grpcnet: zstd: %w", err)
	}
	fields := [...]*[]byte{&t.LeF32, &t.Packed, &t.Index}
	var out [len(fields)][]byte
	raw, packed := 0, 0
	for i, f := range fields {
		if len(*f) == 0 {
			continue
		}
		// A buffer of the packed size: the frame usually fits, and the
		// bytes themselves do when it does not pay.
		out[i] = enc.EncodeAll(*f, make([]byte, 0, len(*f)))
		raw, packed = raw+len(*f), packed+len(out[i])
	}
	smaller := packed < raw
	for i, f := range fields {
		switch {
		case len(*f) == 0:
		case smaller:
			*f = out[i]
		default:
			*f = append(out[i][:0:len(*f)], *f...)
		}
	}
	if smaller {
		t.Compression = pb.Compression_COMPRESSION_ZSTD
	}
	return nil
}

// errNoContentSize refuses a frame that does not say what it decodes to
// as a single segment.
var errNoContentSize = errors.New("zstd frame without a content size or not single-segment")

// decompressField decodes frame, which may decode to at most limit bytes,
// allocating no more than the size its header declares (within limit).
func decompressField(frame []byte, limit int) ([]byte, error) {
	if len(frame) == 0 {
		return nil, nil
	}
	var h zstd.Header
	if err := h.Decode(frame); err != nil {
		return nil, fmt.Errorf("zstd frame header: %w", err)
	}
	if !h.HasFCS || !h.SingleSegment {
		return nil, errNoContentSize
	}
	if h.FrameContentSize > uint64(limit) {
		return nil, fmt.Errorf("zstd frame declares %d bytes, the shape allows at most %d", h.FrameContentSize, limit)
	}
	_, dec, err := zstdCodecs()
	if err != nil {
		return nil, err
	}
	want := int(h.FrameContentSize)
	out, err := dec.DecodeAll(frame, make([]byte, 0, want))
	if err != nil {
		return nil, fmt.Errorf("zstd: %w", err)
	}
	if len(out) != want {
		return nil, fmt.Errorf("zstd frame decodes to %d bytes, its header declares %d", len(out), want)
	}
	return out, nil
}

// decompressTensor returns t's le_f32, packed and index fields,
// decompressed when t is marked compressed; comp is the session's
// compression and enc t's (checked) encoding.
func decompressTensor(t *pb.Tensor, enc wire.Encoding, comp wire.Compression) (raw, packed, index []byte, err error) {
	raw, packed, index = t.GetLeF32(), t.GetPacked(), t.GetIndex()
	switch c := t.GetCompression(); {
	case c == pb.Compression_COMPRESSION_NONE:
		return raw, packed, index, nil
	case c != pb.Compression_COMPRESSION_ZSTD:
		return nil, nil, nil, fmt.Errorf("unknown compression %d", c)
	case comp != wire.Zstd:
		return nil, nil, nil, fmt.Errorf("compression zstd, the session agreed on %v", comp)
	}
	limit := enc.Size(int(t.GetRows()), int(t.GetCols()))
	for _, f := range []struct {
		name string
		b    *[]byte
	}{{"le_f32", &raw}, {"packed", &packed}, {"index", &index}} {
		if *f.b, err = decompressField(*f.b, limit); err != nil {
			return nil, nil, nil, fmt.Errorf("%s: %w", f.name, err)
		}
	}
	return raw, packed, index, nil
}
