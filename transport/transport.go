// Package transport defines what the two parties say to each other and the
// interfaces through which they say it. Only these messages cross the
// boundary: example IDs and the cut-layer embedding forward, the
// (protected) cut-layer gradient backward. There is no message that could
// carry a label, a prediction or a loss to the passive party; the answer to
// an evaluation round carries two bits (Backward.Keep, Backward.Stop) so
// that a two-process run selects its model and stops early as one process
// does. Around them, the control plane (control.go): the Hello each party
// opens a session with and the configuration fingerprint it carries, and
// the inference batches and their answers.
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
	// Keep and Stop are the active party's verdict on an evaluation round,
	// set only on the answer to its last message (Forward.Last): Keep says
	// that the active keeps this evaluation's models (its validation AUC
	// is the best so far: the passive keeps its bottom as it is now), Stop
	// that training ends here (early stopping). Each is one bit per
	// evaluation about the validation AUC; see docs/THREAT-MODEL.md.
	Keep, Stop bool
}

// CheckVerdict refuses an answer b to f that carries a verdict (Keep or
// Stop) when f is not the last message of an evaluation round.
func CheckVerdict(f *Forward, b *Backward) error {
	if (b.Keep || b.Stop) && (f.Phase != Eval || !f.Last) {
		return fmt.Errorf("transport: the answer to %v step %d batch %d carries a verdict (keep %v, stop %v): only the last message of an evaluation round may", f.Phase, f.Step, f.Batch, b.Keep, b.Stop)
	}
	return nil
}

// PassiveConn is the passive party's end of a connection.
//
// The contract below holds for every implementation; the conformance suite
// transport/transporttest checks it. A message is malformed when it is nil,
// has an unknown phase, a negative step, epoch or batch, no embedding or an
// empty one, a matrix whose Data does not hold Rows×Cols values, or not one
// ID per embedding row. NaN and ±Inf values are the parties' to refuse: each
// checks what it sends (tensor.CheckFinite) and what it receives
// (ValidateForward, ValidateBackward); a transport may refuse them too
// (grpcnet does, decoding bytes from another process) or pass them on.
//
//   - Fidelity: the active party receives every field of f as sent, and the
//     passive every field of the answer as replied, bit for bit (-0,
//     subnormals and the largest finite values included). A batch that is
//     well formed is never refused or altered, however unusual (one row,
//     identical rows as in a one-class batch, an all-zero gradient).
//   - Order and replay: messages are delivered one at a time in the order
//     sent. A Forward that does not come after the last one handed to the
//     active party (see Precedes) is not handed to it again: it is refused
//     with an error, or, when it repeats the last message exactly, may be
//     answered with that message's answer (a retry); a transport that
//     pipelines (Pipeline) may also answer an exact repeat of one of its
//     last messages in flight with that message's own answer (a re-send
//     after a broken connection). A message sent while the previous one
//     is unanswered is refused.
//   - Malformed messages are refused with an error at Exchange and never
//     reach the active party; a refused message uses up nothing, so the
//     same step may be sent again correctly. Whether a well-formed message
//     fits the receiver's schedule is the receiver's to check
//     (ValidateForward, ValidateBackward): the transport passes it on.
//   - Cancellation: when ctx ends while Exchange waits, it returns promptly
//     with an error wrapping ctx.Err(). The message may or may not have
//     reached the active party; a later Exchange never returns the answer
//     meant for an abandoned one.
//   - Close: the active party's Recv returns io.EOF once Close was called
//     (whether or not any message was exchanged, or the last one refused);
//     Exchange after Close returns an error; calling Close again returns
//     nil. (grpcnet's Client meets the first part only while a Train stream
//     is open; its conformance test states this deviation.)
type PassiveConn interface {
	// Exchange sends f and waits for the active party's answer.
	Exchange(ctx context.Context, f *Forward) (*Backward, error)
	// Close tells the active party that no more batches follow.
	Close() error
}

// ActiveConn is the active party's end of a connection.
//
// The contract (checked by transport/transporttest): Recv and Reply return
// promptly with an error wrapping ctx.Err() when ctx ends while they wait,
// and Reply with an ended ctx sends nothing. Reply refuses, with an error
// and without sending anything, an answer when no received message is
// unanswered, and a malformed answer: nil, naming another step or batch
// than the message it answers, a Train answer without a gradient of the
// embedding's shape (or whose Data does not match its shape), an Eval
// answer with a gradient; the active party may then reply again. Non-finite
// gradients are treated as non-finite embeddings are (see PassiveConn). A
// Reply to a message whose sender stopped waiting may return an error or
// nil; its answer never reaches a later Exchange.
type ActiveConn interface {
	// Recv waits for the next forward message; it returns io.EOF once the
	// passive party has closed the connection.
	Recv(ctx context.Context) (*Forward, error)
	// Reply answers the message last received.
	Reply(ctx context.Context, b *Backward) error
}

// Precedes reports whether a comes before b in the order of a run's
// messages: by Step; within one Step, the evaluation round (Eval messages
// of step S are sent after S training steps) before the Train batch; then
// by Batch. Epoch, IDs and the embedding do not take part.
func Precedes(a, b *Forward) bool {
	if a.Step != b.Step {
		return a.Step < b.Step
	}
	if ra, rb := phaseRank(a.Phase), phaseRank(b.Phase); ra != rb {
		return ra < rb
	}
	return a.Batch < b.Batch
}

// phaseRank orders the phases within one step.
func phaseRank(p Phase) int {
	if p == Eval {
		return 0
	}
	return 1
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
