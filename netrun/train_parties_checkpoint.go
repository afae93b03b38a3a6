package netrun

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/splitguard/splitguard/audit"
	"github.com/splitguard/splitguard/rundir"
	"github.com/splitguard/splitguard/transport"
)

// partiesCheckpoints is the active party's side of checkpoints and
// resume in a run with several passive parties.
//
// Every checkpoint is tagged with one step S, a multiple of
// checkpoint_every: each passive, after its training step S, asks the
// active to checkpoint (Checkpoint call) and then saves its own bottom,
// optimiser and generator state; the active saves at the first such call
// (its top or gate, its optimiser, the schedule's cursor, every audit's
// state and the kept model), before any passive can send step S+1 (the
// joined message loop needs all of them). So when any party dies, every
// party holds the checkpoint before the newest one, and the newest is
// held by the active and the passives that reached it.
//
// A passive that dies ends the run: the active ends the surviving
// passives' sessions with the reason and writes a truncated summary, and
// every process exits with its checkpoints in place. Restarted (every
// process, the lost passive's included), the parties align IDs again and
// each passive proposes its newest checkpoint with the list it holds; the
// active waits for every passive's first proposal and resumes at the
// newest step that every party holds (0 when none), refusing any other
// proposal with the step the run resumes at, so that no party continues
// from another step than the others.
type partiesCheckpoints struct {
	store store
	// mu is held by the message loop from a message's arrival to its
	// answer and by a checkpoint, so that a save never overlaps a step.
	mu    sync.Mutex
	saved int64 // the newest step saved by this process
	// acked is the newest checkpoint every party is known to hold (the
	// parties sent the step after it; kept in checkpoints/active.acked):
	// a resume never goes behind it.
	acked int64

	aud    *audit.Auditor      // the run's audit at the cut
	audits []rundir.PartyAudit // each party's and colluding subset's
	total  int64               // the schedule's steps (rundir.Recorder.Start)

	// The resume: each passive's first proposal (the steps it holds),
	// then the step every party continues from.
	propMu   sync.Mutex
	props    [][]int64
	proposed int
	settled  chan struct{}
	at       int64
	atErr    error
}

// resumeProposal answers passive k's proposal of the step to continue
// from (with the steps it holds): the first proposal of every passive
// decides the run's step; a proposal of another step is refused.
func (r *partiesRun) resumeProposal(ctx context.Context, k int, step int64, holds []int64) error {
	select {
	case <-r.ready:
	case <-ctx.Done():
		return ctx.Err()
	}
	if r.readyErr != nil {
		return r.readyErr
	}
	ck := &r.ck
	ck.propMu.Lock()
	select {
	case <-ck.settled:
	default:
		if ck.props[k] == nil {
			ck.props[k] = append(slices.Clone(holds), step, 0)
			ck.proposed++
			if ck.proposed == len(r.names) {
				ck.at, ck.atErr = r.settle()
				close(ck.settled)
			}
		}
	}
	ck.propMu.Unlock()
	select {
	case <-ck.settled:
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(r.cfg.PeerTimeout):
		return fmt.Errorf("active: %w: not every passive party proposed a step to resume from within %v", ErrPeerGone, r.cfg.PeerTimeout)
	}
	if ck.atErr != nil {
		return ck.atErr
	}
	if step != ck.at {
		return fmt.Errorf("active: passive party %s proposes to resume at step %d: the run resumes at step %d, the newest checkpoint every party holds", r.names[k], step, ck.at)
	}
	return nil
}

// settle chooses the step every party continues from (the newest
// checkpoint the active and every passive hold, else 0), restores the
// active's checkpoint of it and rewinds the records to it.
func (r *partiesRun) settle() (int64, error) {
	ck := &r.ck
	ck.mu.Lock()
	defer ck.mu.Unlock()
	var have []int64
	if r.cfg.CheckpointEvery > 0 {
		var err error
		if have, err = ck.store.intact(r.log); err != nil {
			return 0, fmt.Errorf("active: %w", err)
		}
	}
	at := commonStep(have, ck.props)
	if at < ck.acked {
		return 0, fmt.Errorf("active: the newest checkpoint every party holds is of step %d, behind step %d that every party acknowledged (%s): a party lost its checkpoint of step %d; the run's record up to it is kept, so the run does not go back",
			at, ck.acked, ck.store.ackedPath(), ck.acked)
	}
	if at > 0 {
		if err := r.restore(at); err != nil {
			return 0, fmt.Errorf("active: resuming at step %d: %w", at, err)
		}
		ck.saved = at
	}
	if err := r.rec.Rewind(at); err != nil {
		return 0, err
	}
	r.rec.Start(r.split, ck.aud, ck.total)
	if r.met != nil {
		r.met.resume(at, ck.aud.Leak())
	}
	r.log.Info("resuming", "step", at)
	return at, nil
}

// commonStep is the largest step in active and in every one of passives,
// 0 when there is none.
func commonStep(active []int64, passives [][]int64) int64 {
	var at int64
	for _, s := range active {
		if s <= at {
			continue
		}
		all := true
		for _, p := range passives {
			all = all && slices.Contains(p, s)
		}
		if all {
			at = s
		}
	}
	return at
}

// restore loads the active's checkpoint of step into the party built at
// step 0.
func (r *partiesRun) restore(step int64) error {
	ck := &r.ck
	secs, err := ck.store.load(step)
	if err != nil {
		return err
	}
	if err := r.party.LoadState(bytes.NewReader(secs["active"])); err != nil {
		return err
	}
	if r.party.Step() != step {
		return fmt.Errorf("checkpoint of step %d holds step %d", step, r.party.Step())
	}
	if err := ck.aud.UnmarshalBinaryAt(secs["audit"], step); err != nil {
		return err
	}
	for _, a := range ck.audits {
		name := "audit:" + a.Name
		b, ok := secs[name]
		if !ok {
			return fmt.Errorf("checkpoint of step %d holds no section %s", step, name)
		}
		if err := a.Auditor.UnmarshalBinaryAt(b, step); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	return r.kept.restore(secs, step)
}

// checkpointAt answers passive k's Checkpoint call: before the resume a
// proposal of the step to continue from, after it a request to save the
// checkpoint of the party's current step (the first passive's saves).
func (r *partiesRun) checkpointAt(ctx context.Context, k int, step int64, holds []int64) error {
	select {
	case <-r.ck.settled:
	default:
		return r.resumeProposal(ctx, k, step, holds)
	}
	ck := &r.ck
	ck.mu.Lock()
	defer ck.mu.Unlock()
	if got := r.party.Step(); got != step {
		if len(holds) > 0 || step < got {
			return fmt.Errorf("active: passive party %s proposes to resume at step %d in a run at step %d: a passive party of several cannot rejoin a running run; restart every party", r.names[k], step, got)
		}
		return fmt.Errorf("active: passive party %s asks for the checkpoint of step %d at step %d", r.names[k], step, got)
	}
	n := int64(r.cfg.CheckpointEvery)
	if n <= 0 || step <= 0 || step%n != 0 || ck.saved == step {
		return nil
	}
	as, err := ck.aud.MarshalBinary()
	if err != nil {
		return err
	}
	secs := []ckSection{{"active", r.party.SaveState}, bytesSection("audit", as)}
	for _, a := range ck.audits {
		b, err := a.Auditor.MarshalBinary()
		if err != nil {
			return err
		}
		secs = append(secs, bytesSection("audit:"+a.Name, b))
	}
	if s, ok := r.kept.section(); ok {
		secs = append(secs, s)
	}
	if err := ck.store.save(step, secs...); err != nil {
		return fmt.Errorf("active: %w", err)
	}
	ck.saved = step
	r.log.Info("checkpoint saved", "step", step)
	return nil
}

// lockedConn is the joined connection as the message loop sees it: a
// message's arrival takes mu, its answer releases it, so that no
// checkpoint runs during a step.
type lockedConn struct {
	transport.ActiveConn
	mu   *sync.Mutex
	held bool
}

func (c *lockedConn) Recv(ctx context.Context) (*transport.Forward, error) {
	f, err := c.ActiveConn.Recv(ctx)
	if err == nil {
		c.mu.Lock()
		c.held = true
	}
	return f, err
}

func (c *lockedConn) Reply(ctx context.Context, b *transport.Backward) error {
	err := c.ActiveConn.Reply(ctx, b)
	c.release()
	return err
}

// release unlocks mu if a message holds it.
func (c *lockedConn) release() {
	if c.held {
		c.held = false
		c.mu.Unlock()
	}
}

// endSurvivors ends every passive's session when one is lost (why), so
// that the surviving passives stop at once, with their checkpoints,
// instead of waiting for the peer timeout.
func (r *partiesRun) endSurvivors(why error) {
	msg := fmt.Errorf("%w; the run ends here", why)
	if r.cfg.CheckpointEvery > 0 {
		msg = fmt.Errorf("%w; every party keeps its checkpoints: restart every party to resume from the newest checkpoint all of them hold", why)
	}
	r.log.Warn("a passive party is lost; ending every session", "err", why)
	for k := range r.names {
		r.srv.Conn(k).Abort(msg)
	}
}

// ackSaved records, when the parties' message of step arrives, that
// every party holds the checkpoint saved before it (each passive saves
// its own before it sends the next step).
func (r *partiesRun) ackSaved(step int64) error {
	ck := &r.ck
	if ck.saved <= ck.acked || step < ck.saved {
		return nil
	}
	if err := ck.store.writeAcked(ck.saved); err != nil {
		return fmt.Errorf("active: %w", err)
	}
	ck.acked = ck.saved
	return nil
}
