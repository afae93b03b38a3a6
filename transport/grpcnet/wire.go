package grpcnet

import (
	"fmt"

	"google.golang.org/protobuf/proto"

	pb "github.com/splitguard/splitguard/proto/splitguardpb"
	"github.com/splitguard/splitguard/transport"
	"github.com/splitguard/splitguard/transport/wire"
)

// messagePrefix is the length-prefixed-message header gRPC writes before
// every message: a compression flag byte and a 4-byte length.
const messagePrefix = 5

// WireBytes returns the bytes one exchange puts on the connection: a
// Client sending f (forward) and a Server answering with b (backward),
// counted as [Stats] counts them — the protobuf encoding this package
// sends plus gRPC's 5-byte message header, without HTTP/2 and TLS
// framing. b is nil for the answer to an Eval message. enc are the
// session's encodings; the tensors must hold values they represent
// (rounded by wire.Encoding.Round), as the parties send them.
func WireBytes(f *transport.Forward, b *transport.Backward, enc wire.Encodings) (forward, backward int64, err error) {
	m, err := encodeForward(f, enc.Embedding, enc.Compression)
	if err != nil {
		return 0, 0, err
	}
	r := &pb.Backward{}
	if b != nil {
		r.Step, r.Batch = b.Step, int64(b.Batch)
		if b.Grad != nil {
			if r.Grad, err = encodeTensor(b.Grad, enc.Gradient, enc.Compression); err != nil {
				return 0, 0, fmt.Errorf("grpcnet: step %d batch %d: gradient: %w", b.Step, b.Batch, err)
			}
		}
	}
	return int64(proto.Size(m) + messagePrefix), int64(proto.Size(r) + messagePrefix), nil
}
