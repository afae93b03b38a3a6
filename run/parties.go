package run

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"sync"

	"github.com/splitguard/splitguard/atomicfile"
	"github.com/splitguard/splitguard/audit"
	"github.com/splitguard/splitguard/config"
	"github.com/splitguard/splitguard/data"
	"github.com/splitguard/splitguard/integrity"
	"github.com/splitguard/splitguard/model"
	"github.com/splitguard/splitguard/party/active"
	"github.com/splitguard/splitguard/party/passive"
	"github.com/splitguard/splitguard/rundir"
	"github.com/splitguard/splitguard/tensor"
	"github.com/splitguard/splitguard/transport/fanin"
)

// PartyBottomFile is the file of passive party NAME's bottom model in a
// run with several passive parties; the first party's is
// rundir.BottomModelFile, as in a one-passive run.
func PartyBottomFile(name string) string { return rundir.PartyBottomFile(name) }

// partyViewsK returns each passive party's view and the active party's
// under key parties (config.Config.PartyFeatures).
func partyViewsK(cfg *config.Config, split *data.Split, train, val *data.Dataset) ([]*view, *view, error) {
	pvs := make([]*view, len(cfg.Parties))
	for k := range pvs {
		pvs[k] = &view{info: split.Info}
	}
	av := &view{info: split.Info}
	for _, d := range []struct {
		src *data.Dataset
		pd  func(*view) **data.Dataset
	}{{train, func(v *view) **data.Dataset { return &v.train }}, {val, func(v *view) **data.Dataset { return &v.val }},
		{split.Test, func(v *view) **data.Dataset { return &v.test }}} {
		if d.src == nil {
			continue
		}
		px, ax, err := cfg.PartyFeatures(d.src.X)
		if err != nil {
			return nil, nil, err
		}
		for k, x := range px {
			*d.pd(pvs[k]) = &data.Dataset{IDs: d.src.IDs, X: x, Labels: d.src.Labels}
		}
		*d.pd(av) = &data.Dataset{IDs: d.src.IDs, X: ax, Labels: d.src.Labels}
	}
	return pvs, av, nil
}

// partyRun is what trainParties builds for K passive parties.
type partyRun struct {
	cfg     *config.Config
	names   []string
	bottoms []model.Bottom
	cols    [][2]int // each party's columns of the combined embedding
	layers  []string
	rec     *rundir.Recorder
	guard   *integrity.Guard
	ctx     context.Context

	mu   sync.Mutex
	act  *active.Observation
	obs  []*passive.Observation
	n    int
	wait *stepWait
	err  error

	views   [][]int          // each audited subset's members (party indices)
	scratch []*tensor.Matrix // the subsets' pooled gradients, embeddings and clean gradients
}

// stepWait is one step's barrier: the passive parties' observers wait
// for the last of them, which records the step.
type stepWait struct {
	done chan struct{}
	err  error
}

func (p *partyRun) active(ob *active.Observation) error {
	p.act = ob
	scores, err := p.guard.Batch(ob.Step, ob.Embedding)
	p.rec.ObserveIntegrity(scores)
	return err
}

// passive returns party k's observer: it waits until every party has
// observed the step, and the last to arrive records it.
func (p *partyRun) passive(k int) func(*passive.Observation) error {
	return func(ob *passive.Observation) error {
		p.mu.Lock()
		if p.wait == nil {
			p.wait = &stepWait{done: make(chan struct{})}
		}
		w := p.wait
		p.obs[k] = ob
		p.n++
		if p.n < len(p.obs) {
			p.mu.Unlock()
			select {
			case <-w.done:
				return w.err
			case <-p.ctx.Done():
				return context.Cause(p.ctx)
			}
		}
		p.n, p.wait = 0, nil
		w.err = p.record()
		if w.err != nil && p.err == nil {
			p.err = w.err
		}
		p.mu.Unlock()
		close(w.done)
		return w.err
	}
}

// record audits and writes one step: the coalition of every passive
// party (the combined gradient, at the cut) as the run's leak, each party
// (all its layers) and each colluding subset (the union of its members'
// cut gradients and embeddings) as Parties.
func (p *partyRun) record() error {
	a := p.act
	for k, ob := range p.obs {
		if a == nil || ob.Step != a.Step {
			return fmt.Errorf("step %d: no active-party record for passive party %s", ob.Step, p.names[k])
		}
	}
	one := []string{"cut"}
	main := &audit.Batch{Step: a.Step, Epoch: a.Epoch, IDs: p.obs[0].IDs, Labels: a.Labels, Layers: one,
		Grads: []*tensor.Matrix{a.Protected}, Outputs: []*tensor.Matrix{a.Embedding},
		Clean: func() ([]*tensor.Matrix, error) { return []*tensor.Matrix{a.Clean}, nil }}
	var batches []*audit.Batch
	for v, members := range p.views {
		if len(members) == 1 {
			k := members[0]
			ob := p.obs[k]
			batches = append(batches, &audit.Batch{Step: a.Step, Epoch: a.Epoch, IDs: ob.IDs, Labels: a.Labels, Layers: p.layers,
				Grads: ob.Grads, Outputs: ob.Outputs,
				Clean: func() ([]*tensor.Matrix, error) {
					return p.bottoms[k].Backprop(p.columns(3*v+2, a.Clean, members))
				}})
			continue
		}
		g, e, c := p.columns(3*v, a.Protected, members), p.columns(3*v+1, a.Embedding, members), p.columns(3*v+2, a.Clean, members)
		batches = append(batches, &audit.Batch{Step: a.Step, Epoch: a.Epoch, IDs: p.obs[0].IDs, Labels: a.Labels, Layers: one,
			Grads: []*tensor.Matrix{g}, Outputs: []*tensor.Matrix{e},
			Clean: func() ([]*tensor.Matrix, error) { return []*tensor.Matrix{c}, nil }})
	}
	_, err := p.rec.Batch(rundir.Observation{Active: a, Audit: main, Parties: batches})
	return err
}

// columns gathers the members' columns of m (their blocks side by side,
// each column once) into scratch matrix i.
func (p *partyRun) columns(i int, m *tensor.Matrix, members []int) *tensor.Matrix {
	var ranges [][2]int
	for _, k := range members {
		c := p.cols[k]
		if len(ranges) > 0 && ranges[len(ranges)-1] == c {
			continue // aggregation sum: every party's block is the whole
		}
		ranges = append(ranges, c)
	}
	p.scratch[i] = fanin.Gather(p.scratch[i], m, ranges)
	return p.scratch[i]
}

// auditedViews lists every passive party alone, then every colluding
// subset of two or more, smallest first, each in party order.
func auditedViews(k int) [][]int { return fanin.Coalitions(k) }

// trainParties is Train for two or more passive parties (key parties):
// each holds its columns and its own bottom, derives the same batches
// from the schedule and talks to the active party over its own
// connection; the active party reads them through one joined connection
// (transport/fanin) and answers each with its block of the gradient,
// protected by that party's protection. Its phases: set-up, the parties
// and their connections, the space for the models, the steps, finishing.
func trainParties(ctx context.Context, cfg config.Config, split *data.Split, train, val *data.Dataset, opt Options) (*rundir.Summary, error) {
	pvs, av, err := partyViewsK(&cfg, split, train, val)
	if err != nil {
		return nil, err
	}
	m := &multiRun{runBase: runBase{cfg: &cfg, opt: opt}, pvs: pvs, av: av}
	defer m.close()
	if err := m.setUp(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	if err := m.buildParties(ctx); err != nil {
		return nil, err
	}
	if err := m.reserveModels(m.top, m.bottoms...); err != nil {
		return nil, err
	}
	elapsed, runErr := m.train(ctx, cancel)
	beforeSave := gateWeightsLog(opt, m.top, m.names)
	if m.cheat != nil && m.cheat.bd != nil {
		beforeSave = m.recordBackdoor // a backdoor needs aggregation concat: no gate
	}
	return m.finish(ctx, m.pas[0].Step(), m.pas[0].Stopped(), elapsed, runErr, beforeSave)
}

// gateWeightsLog returns what logs the learned weights of the parties
// under aggregation gated (nil for another aggregation).
func gateWeightsLog(opt Options, top model.Top, names []string) func() error {
	g, ok := top.(*config.GatedTop)
	if !ok {
		return nil
	}
	return func() error {
		var b strings.Builder
		for k, w := range g.Gate.Weights() {
			fmt.Fprintf(&b, " %s %.4f", names[k], w)
		}
		logf(opt.logger(), "aggregation gated: the parties' learned weights after the last step:%s", b.String())
		return nil
	}
}

// partySelection keeps the passive parties' bottoms after the first at
// the evaluation the selection keeps (the first party's bottom and the
// top are the selection's own), and saves them each into its party's
// file. Its methods do nothing on a nil receiver.
type partySelection struct {
	names   []string
	bottoms []model.Bottom
	bufs    []bytes.Buffer
	has     bool
}

// snapshot keeps the bottoms as they are now.
func (p *partySelection) snapshot() error {
	if p == nil {
		return nil
	}
	if p.bufs == nil {
		p.bufs = make([]bytes.Buffer, len(p.bottoms))
	}
	for k, b := range p.bottoms {
		p.bufs[k].Reset()
		if err := b.Save(&p.bufs[k]); err != nil {
			return fmt.Errorf("keeping passive party %s's selected bottom model: %w", p.names[k], err)
		}
	}
	p.has = true
	return nil
}

// save writes each bottom (the snapshot, or the last model) into its
// party's file of dir.
func (p *partySelection) save(dir string) error {
	if p == nil {
		return nil
	}
	for k, b := range p.bottoms {
		write := b.Save
		if p.has {
			buf := p.bufs[k].Bytes()
			write = func(w io.Writer) error { _, err := w.Write(buf); return err }
		}
		file := PartyBottomFile(p.names[k])
		if err := atomicfile.Write(filepath.Join(dir, file), rundir.FileMode, write); err != nil {
			return fmt.Errorf("saving %s: %w", file, err)
		}
	}
	return nil
}
