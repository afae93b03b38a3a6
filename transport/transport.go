// Package transport defines what the two parties say to each other and the
// interfaces through which they say it. Only these messages cross the
// boundary: example IDs and the cut-layer embedding forward, the
// (protected) cut-layer gradient backward. There is no message that could
// carry a label, a prediction or a loss to the passive party.
//
// Implementations: transport/inproc (Go channels, one process) and
// transport/grpcnet (gRPC with mutual TLS, two processes).
package transport

import (
	"context"
	"fmt"

	"github.com/splitguard/splitguard/tensor"
)

// Phase says what a forward message is for.
type Phase uint8

const (
	// Train is a training batch: the active party answers with the
	// protected gradient of its loss with respect to the embedding.
	Train Phase = iota + 1
	// Eval is a batch of test embeddings: the active party scores them and
	// answers with an empty acknowledgement.
	Eval
)

func (p Phase) String() string {
	switch p {
	case Train:
		return "train"
	case Eval:
		return "eval"
	}
	return fmt.Sprintf("phase(%d)", uint8(p))
}

// Forward carries one batch of cut-layer embeddings from the passive to
// the active party.
type Forward struct {
	Phase Phase
	// Step is the global training step (0-based) of a Train batch; for an
	// Eval batch it is the number of training steps done before the
	// evaluation.
	Step  int64
	Epoch int
	// Batch is the batch's index within its epoch (Train) or within the
	// evaluation round (Eval).
	Batch int
	// Last marks the final batch of an evaluation round.
	Last bool
	// IDs are the batch's example IDs, one per embedding row, in the order
	// of the schedule both parties derived.
	IDs []uint64
	// Embedding is the B×d cut-layer output f(X).
	Embedding *tensor.Matrix
}

// Backward carries the active party's answer to one Forward.
type Backward struct {
	Step  int64
	Batch int
	// Grad is the protected gradient g̃ (B×d) for a Train batch and nil for
	// an Eval batch.
	Grad *tensor.Matrix
}

// PassiveConn is the passive party's end of a connection.
type PassiveConn interface {
	// Exchange sends f and waits for the active party's answer.
	Exchange(ctx context.Context, f *Forward) (*Backward, error)
	// Close tells the active party that no more batches follow.
	Close() error
}

// ActiveConn is the active party's end of a connection.
type ActiveConn interface {
	// Recv waits for the next forward message; it returns io.EOF once the
	// passive party has closed the connection.
	Recv(ctx context.Context) (*Forward, error)
	// Reply answers the message last received.
	Reply(ctx context.Context, b *Backward) error
}

// ValidateForward checks a forward message against what the receiver
// expects: phase, step, batch position, IDs and a finite embedding of the
// right shape. wantIDs are the IDs the receiver's own schedule gives for
// this batch.
func ValidateForward(f *Forward, phase Phase, step int64, batch int, wantIDs []uint64, dim int) error {
	if f.Phase != phase {
		return fmt.Errorf("transport: step %d batch %d: got a %v message, want %v", step, batch, f.Phase, phase)
	}
	if f.Step != step || f.Batch != batch {
		return fmt.Errorf("transport: got step %d batch %d, want step %d batch %d", f.Step, f.Batch, step, batch)
	}
	if len(f.IDs) != len(wantIDs) {
		return fmt.Errorf("transport: step %d batch %d: %d example IDs, schedule has %d", step, batch, len(f.IDs), len(wantIDs))
	}
	for i, id := range f.IDs {
		if id != wantIDs[i] {
			return fmt.Errorf("transport: step %d batch %d: example %d has ID %d, schedule has %d", step, batch, i, id, wantIDs[i])
		}
	}
	if f.Embedding == nil || f.Embedding.Rows != len(wantIDs) || f.Embedding.Cols != dim {
		return fmt.Errorf("transport: step %d batch %d: embedding shape %s, want %d×%d", step, batch, shape(f.Embedding), len(wantIDs), dim)
	}
	return tensor.CheckFinite(fmt.Sprintf("transport: step %d batch %d: embedding", step, batch), f.Embedding)
}

// ValidateBackward checks the answer to a Train message: the step and batch
// it answers and a finite gradient of the embedding's shape.
func ValidateBackward(b *Backward, step int64, batch, rows, dim int) error {
	if b.Step != step || b.Batch != batch {
		return fmt.Errorf("transport: gradient for step %d batch %d, want step %d batch %d", b.Step, b.Batch, step, batch)
	}
	if b.Grad == nil || b.Grad.Rows != rows || b.Grad.Cols != dim {
		return fmt.Errorf("transport: step %d batch %d: gradient shape %s, want %d×%d", step, batch, shape(b.Grad), rows, dim)
	}
	return tensor.CheckFinite(fmt.Sprintf("transport: step %d batch %d: gradient", step, batch), b.Grad)
}

func shape(m *tensor.Matrix) string {
	if m == nil {
		return "none"
	}
	return fmt.Sprintf("%d×%d", m.Rows, m.Cols)
}
