package grpcnet

import "runtime"

// handOff lets gRPC's writer put a pipelined message on the wire before
// the sender's next compute. A stream's Send only queues the message:
// gRPC's writer goroutine (one per connection) writes it, and the Send
// wakes that writer onto the sender's own processor (the Go scheduler's
// "run next" slot). Where every processor is busy — the party's next
// step, internal/par's workers, the other party's step when both run on
// one machine — the writer then waits until the sender blocks or is
// preempted (10 ms), so under a pipelined schedule the bytes left only
// after the next step's compute (docs/methods/wan.md, "The serial chain of
// the WAN k = 4 row"). Yielding once after the Send runs the writer
// first: it encrypts and writes the message, and the sender continues
// when the writer blocks. In the synchronous protocol the sender waits for the
// answer at once, which runs the writer anyway, so only pipelined sends
// (the client's Send, the server's answers on a pipelined stream) yield,
// unless off (the options' noHandOff, set by tests to see what it changes).
func handOff(off bool) {
	if !off {
		runtime.Gosched()
	}
}
