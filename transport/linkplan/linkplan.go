// Package linkplan predicts the time of a split training step over a
// wide-area link from what a step costs each party and what it sends:
// the model behind `splitguard plan-link` (docs/methods/wan.md, "The
// planner").
//
// A step of the synchronous protocol (staleness k = 0, one update per
// exchange, Q = 1) is a chain: the passive computes its embedding, sends
// it, the active computes the loss and the gradient and answers, and the
// passive applies the gradient. Its time is
//
//	t = C_p + C_a + o + RTT + B_f/W_up + B_b/W_down
//
// with C_p the passive party's compute per step (forward, backward and
// update of the bottom), C_a the active's (top, protection, rounding),
// o the transport's own cost per exchange (encoding, TLS, gRPC; measured
// on loopback), RTT the round trip, B_f and B_b the bytes of the forward
// and backward message and W_up, W_down the bandwidth passive → active and
// back.
//
// With bounded staleness k the passive keeps up to k+1 batches in flight
// (it computes the embedding of batch t+k+1 once the gradient of batch t
// is applied). The step is then a closed pipeline of four resources —
// the passive's processor, the uplink, the active's processor, the
// downlink — each serving one batch at a time, through which k+1 batches
// circulate, plus the latency, which holds batches but serves any number
// at once. In the marked-graph model of such a pipeline (deterministic
// times), the time per batch is the largest cycle's time over its
// tokens:
//
//	t = max(C_p, C_a, B_f/W_up, B_b/W_down, (C_p + C_a + o + RTT + B_f/W_up + B_b/W_down)/(k+1)),
//
// the slowest resource, or the round of one batch shared by k+1. The
// parties' compute overlaps only because they run on different machines;
// on one machine they share its processors (the last term below).
//
// With Q local updates per exchange (FedBCD: after an exchange each party
// takes Q−1 further steps on the partner's cached message — the passive
// recomputes its embedding and backpropagates the cached gradient, the
// active reruns its top on the cached embedding), each exchange costs the
// passive Q·C_p and the active Q·C_a. The active takes its local steps
// before it answers (party/active: a checkpoint never splits them), so
// they lie on the batch's round as well as on the active's own cycle.
// Under staleness (k > 0) the passive also recomputes the embedding of
// the batch whose gradient arrived (the activations of its send were
// overwritten by the later forwards): R, one forward of the bottom, more
// per exchange. With P = Q·C_p + R (R only when k > 0) and A = Q·C_a,
//
//	T = max(P, A, B_f/W_up, B_b/W_down, (P + A + o + RTT + B_f/W_up + B_b/W_down)/(k+1))
//
// per exchange (one batch), and T/Q per update: the link's cost is
// shared by Q updates. For k = 0 and Q = 1 both reduce to t above.
//
// The parties' compute overlaps only on processors of their own. When
// both parties and the transport run on one machine of N cores
// (Costs.SharedCores, as when a machine checks the planner through an
// emulated link), every part's processor time comes out of the same N
// cores: with the processor times (Costs.CPU, not wall times) W_p and
// W_a of a party's step, W_r of the recompute and W_o of the transport
// per exchange (both ends' encoding, TLS, gRPC, a proxy's copying),
//
//	W = Q·(W_p + W_a) + W_r (k > 0 only) + W_o,
//
// and T is at least W/N (rounded up to the nanosecond), besides the
// terms above, each a chain that no number of cores shortens.
//
// On hosts of their own of N cores each (Costs.HostCores), a party's
// compute and its end of the transport share its host's cores. Each host
// bounds T as the one machine does, with its own part of W:
//
//	T ≥ (Q·W_p + W_r (k > 0 only) + W_o/2)/N   (the passive's host)
//	T ≥ (Q·W_a + W_o/2)/N                      (the active's host)
//
// (each rounded up to the nanosecond). Half of the transport's processor
// time to each end is an approximation: each end encodes what it sends
// and decodes what it receives, and the two directions' messages need
// not cost the same.
package linkplan

import (
	"fmt"
	"math"
	"time"
)

// Link is a wide-area link between the two parties.
type Link struct {
	// RTT is the round trip time.
	RTT time.Duration
	// Up and Down are the bandwidths in bytes per second, passive →
	// active (embeddings) and active → passive (gradients); 0 is
	// unlimited.
	Up, Down float64
}

// Costs are what one training step costs, measured without the link.
type Costs struct {
	// Passive and Active are each party's compute per step: the passive's
	// forward, backward and update of the bottom; the active's top,
	// loss, protection, rounding and update.
	Passive, Active time.Duration
	// Recompute is the passive's forward of the bottom on one batch: what
	// a pipelined schedule (staleness k > 0) adds to the passive's compute
	// per exchange, which recomputes the embedding of the batch whose
	// gradient arrived.
	Recompute time.Duration
	// Overhead is the transport's own time per exchange (encoding and
	// decoding, TLS, gRPC) on a link without delay or bandwidth limit.
	Overhead time.Duration
	// Forward and Backward are the bytes of the training messages each
	// way, as the transport puts them on the connection.
	Forward, Backward int64
	// CPU is the processor time (not the wall time) of each part of a
	// step: what parties sharing cores compete for (SharedCores).
	CPU CPUTimes
	// SharedCores is how many cores the two parties and the transport
	// share when they run on one machine: their processor time per
	// exchange then adds up over those cores. Fractional where other work
	// on the machine takes part of them (0.7: the parties get 0.7 s of
	// processor time per second). 0: each party on a host of its own.
	SharedCores float64
	// HostCores is how many cores each party's host has when the parties
	// run on hosts of their own: a party's compute and its end of the
	// transport (half of CPU.Transport) then share them. 0: not modelled,
	// each party's compute bounded by its wall time only. Not together
	// with SharedCores.
	HostCores float64
}

// CPUTimes are the processor times of a step's parts, all the threads
// of each part together. A part that computes on several cores at once
// takes more processor time than wall time.
type CPUTimes struct {
	// Passive and Active are each party's processor time per step (the
	// work of Costs.Passive and Costs.Active); Recompute the passive's
	// for one forward of the bottom (Costs.Recompute).
	Passive, Active, Recompute time.Duration
	// Transport is the processor time per exchange of everything that
	// carries the messages between the parties: encoding and decoding at
	// both ends, TLS, gRPC and, in a check, the link proxy's copying.
	Transport time.Duration
}

// ends is the processor time of one exchange of schedule s at each end,
// in nanoseconds: the passive's Q steps and, under staleness, its
// recompute; the active's Q steps; and half of the transport to each.
// Their sum is the exchange's whole processor time.
func (c CPUTimes) ends(s Schedule) (passive, active float64) {
	q := time.Duration(s.LocalSteps)
	p, a := q*c.Passive, q*c.Active
	if s.Staleness > 0 {
		p += c.Recompute
	}
	half := float64(c.Transport) / 2
	return float64(p) + half, float64(a) + half
}

// Schedule is how the parties overlap their steps.
type Schedule struct {
	// Staleness k is how many further batches the passive may send
	// while a gradient is in flight (0: the synchronous protocol).
	Staleness int
	// LocalSteps Q is the updates each party takes per exchange (1: one,
	// the synchronous protocol; FedBCD's local steps beyond it).
	LocalSteps int
}

// Bound names what limits a prediction.
type Bound string

// What can bound a step.
const (
	BoundPassive  Bound = "passive compute"
	BoundActive   Bound = "active compute"
	BoundUplink   Bound = "uplink bandwidth"
	BoundDownlink Bound = "downlink bandwidth"
	BoundRound    Bound = "round trip"
	BoundShared   Bound = "shared processors"
	// BoundPassiveHost and BoundActiveHost are the processor time of a
	// party and its end of the transport on its own host's cores
	// (Costs.HostCores).
	BoundPassiveHost Bound = "passive processors"
	BoundActiveHost  Bound = "active processors"
)

// Prediction is the predicted time of a schedule.
type Prediction struct {
	// PerExchange is the time per exchange, one batch; PerUpdate the time
	// per update of each party's model (PerExchange/Q).
	PerExchange, PerUpdate time.Duration
	// Round is one batch's time through the whole chain (both parties'
	// compute per exchange, overhead, round trip and both transfers).
	Round time.Duration
	// Bound is the term that sets PerExchange.
	Bound Bound
}

// Transfer is the time to push n bytes at bytesPerSecond (0 when
// unlimited).
func Transfer(n int64, bytesPerSecond float64) time.Duration {
	if bytesPerSecond == 0 {
		return 0
	}
	return time.Duration(math.Round(float64(n) / bytesPerSecond * 1e9))
}

// Predict returns the time per exchange and per update of schedule s
// over link l for a step costing c (see the package documentation for
// the model). Negative costs, a negative staleness, fewer than one local
// step, a negative or non-finite bandwidth, a negative or non-finite
// number of cores, cores without processor times, or both shared and
// host cores are errors.
func Predict(l Link, c Costs, s Schedule) (Prediction, error) {
	switch {
	case l.RTT < 0 || !(l.Up >= 0 && l.Up <= math.MaxFloat64) || !(l.Down >= 0 && l.Down <= math.MaxFloat64):
		return Prediction{}, fmt.Errorf("linkplan: link %+v: round trip and bandwidths must be non-negative and finite", l)
	case c.Passive < 0 || c.Active < 0 || c.Recompute < 0 || c.Overhead < 0 || c.Forward < 0 || c.Backward < 0,
		c.CPU.Passive < 0 || c.CPU.Active < 0 || c.CPU.Recompute < 0 || c.CPU.Transport < 0:
		return Prediction{}, fmt.Errorf("linkplan: negative cost in %+v", c)
	case !(c.SharedCores >= 0 && c.SharedCores <= math.MaxFloat64):
		return Prediction{}, fmt.Errorf("linkplan: %g shared cores, want 0 (hosts of their own) or more, finite", c.SharedCores)
	case c.SharedCores > 0 && c.CPU == CPUTimes{}:
		return Prediction{}, fmt.Errorf("linkplan: %g shared cores but no processor times in the costs", c.SharedCores)
	case !(c.HostCores >= 0 && c.HostCores <= math.MaxFloat64):
		return Prediction{}, fmt.Errorf("linkplan: %g host cores, want 0 (not modelled) or more, finite", c.HostCores)
	case c.HostCores > 0 && c.CPU == CPUTimes{}:
		return Prediction{}, fmt.Errorf("linkplan: %g host cores but no processor times in the costs", c.HostCores)
	case c.HostCores > 0 && c.SharedCores > 0:
		return Prediction{}, fmt.Errorf("linkplan: %g shared cores and %g host cores: the parties share one machine or have hosts of their own, not both", c.SharedCores, c.HostCores)
	case s.Staleness < 0:
		return Prediction{}, fmt.Errorf("linkplan: staleness %d, want 0 or more", s.Staleness)
	case s.LocalSteps < 1:
		return Prediction{}, fmt.Errorf("linkplan: %d local steps, want 1 or more", s.LocalSteps)
	}
	q := time.Duration(s.LocalSteps)
	pas, act := q*c.Passive, q*c.Active
	if s.Staleness > 0 {
		pas += c.Recompute
	}
	up, down := Transfer(c.Forward, l.Up), Transfer(c.Backward, l.Down)
	round := pas + act + c.Overhead + l.RTT + up + down
	p := Prediction{Round: round}
	type term struct {
		d time.Duration
		b Bound
	}
	terms := []term{
		{(round + time.Duration(s.Staleness)) / time.Duration(s.Staleness+1), BoundRound}, // rounded up
		{pas, BoundPassive},
		{act, BoundActive},
		{up, BoundUplink},
		{down, BoundDownlink},
	}
	wp, wa := c.CPU.ends(s)
	if n := c.SharedCores; n > 0 {
		terms = append(terms, term{time.Duration(math.Ceil((wp + wa) / n)), BoundShared}) // rounded up
	}
	if n := c.HostCores; n > 0 {
		terms = append(terms,
			term{time.Duration(math.Ceil(wp / n)), BoundPassiveHost}, // rounded up
			term{time.Duration(math.Ceil(wa / n)), BoundActiveHost})
	}
	for _, t := range terms {
		if t.d > p.PerExchange {
			p.PerExchange, p.Bound = t.d, t.b
		}
	}
	if p.Bound == "" {
		p.Bound = BoundRound
	}
	p.PerUpdate = p.PerExchange / q
	return p, nil
}
