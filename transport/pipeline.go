package transport

import (
	"context"
	"fmt"
)

// MaxInFlight is the most Train messages a Pipeline may have unanswered:
// a bounded staleness k needs k+1.
const MaxInFlight = 64

// Pipeline is implemented by a PassiveConn that can have several training
// messages in flight at once (a pipelined schedule with bounded
// staleness: the passive party sends the embeddings of batches
// t+1, …, t+k while the gradient of batch t is on its way back).
//
// The contract, beside PassiveConn's (checked by transport/transporttest):
//
//   - Send hands f to the transport and returns without waiting for its
//     answer; Receive returns the answer to the oldest message sent and
//     not yet received, so answers come back in the order the messages
//     were sent. The active party's end is unchanged: it receives the
//     messages one at a time in order (Recv) and answers each (Reply)
//     before it receives the next.
//   - Only Train messages are pipelined: an Eval message sent with Send,
//     or an Exchange while a message is unanswered, is refused. So an
//     evaluation round always finds the pipeline drained.
//   - Order and replay as for Exchange: a message that does not come
//     after the last one sent (Precedes) is refused, and more than
//     MaxInFlight unanswered messages are refused; a refused message uses
//     up nothing.
//   - Fidelity: each answer carries every field as replied, bit for bit,
//     and stays valid until the next Receive returns (an in-process
//     transport copies a gradient whose buffer the active party reuses).
//     The sender must not modify a message's matrices until its answer
//     has been received.
//   - Cancellation: when ctx ends while Send or Receive waits, it returns
//     promptly with an error wrapping ctx.Err(); the connection is then
//     unusable for pipelined messages (the answers of abandoned messages
//     never reach a later Receive).
//   - Receive with nothing in flight returns an error at once.
type Pipeline interface {
	// Send sends a Train message without waiting for its answer.
	Send(ctx context.Context, f *Forward) error
	// Receive waits for the answer to the oldest unanswered message.
	Receive(ctx context.Context) (*Backward, error)
	// InFlight is the number of messages sent and not yet received.
	InFlight() int
}

// AsPipeline returns conn's Pipeline, or an error saying that the
// transport cannot pipeline, for a schedule of staleness k > 0.
func AsPipeline(conn PassiveConn, k int) (Pipeline, error) {
	if k+1 > MaxInFlight {
		return nil, fmt.Errorf("transport: staleness %d needs %d messages in flight, at most %d", k, k+1, MaxInFlight)
	}
	p, ok := conn.(Pipeline)
	if !ok {
		return nil, fmt.Errorf("transport: staleness %d needs a pipelined connection; %T cannot pipeline", k, conn)
	}
	return p, nil
}
