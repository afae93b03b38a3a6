package run

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/splitguard/splitguard/atomicfile"
	"github.com/splitguard/splitguard/audit"
	"github.com/splitguard/splitguard/config"
	"github.com/splitguard/splitguard/data"
	"github.com/splitguard/splitguard/integrity"
	"github.com/splitguard/splitguard/model"
	"github.com/splitguard/splitguard/party/active"
	"github.com/splitguard/splitguard/party/passive"
	"github.com/splitguard/splitguard/protect"
	"github.com/splitguard/splitguard/rundir"
	"github.com/splitguard/splitguard/schedule"
	"github.com/splitguard/splitguard/tensor"
	"github.com/splitguard/splitguard/transport"
	"github.com/splitguard/splitguard/transport/fanin"
	"github.com/splitguard/splitguard/transport/inproc"
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
// protected by that party's protection.
func trainParties(ctx context.Context, cfg config.Config, split *data.Split, train, val *data.Dataset, opt Options) (*rundir.Summary, error) {
	pvs, av, err := partyViewsK(&cfg, split, train, val)
	if err != nil {
		return nil, err
	}
	names := cfg.PartyNames()
	for k, v := range pvs {
		logf(opt.logger(), "passive party %s holds %v", names[k], v.train.X.ColumnNames())
	}
	logf(opt.logger(), "the active party holds %v; aggregation %s", av.train.X.ColumnNames(), cfg.AggregationOr())
	pxs := make([]*data.Features, len(pvs))
	for k, v := range pvs {
		pxs[k] = v.train.X
	}
	bottoms, top, wide, err := cfg.BuildPartyModels(pxs, av.train.X)
	if err != nil {
		return nil, err
	}
	aSplit := av.split()
	sched, err := schedule.New(len(aSplit.Train.IDs), cfg.Batch, cfg.Seed)
	if err != nil {
		return nil, err
	}
	def, err := cfg.BuildDefences(aSplit.Train)
	if err != nil {
		return nil, err
	}
	agg := fanin.Aggregation(cfg.AggregationOr())
	widths := make([]int, len(bottoms))
	for k, b := range bottoms {
		widths[k] = b.CutDim()
	}
	cols := agg.Blocks(widths)
	var blocks []active.Block
	if agg != fanin.Sum {
		for k := range bottoms {
			pc := cfg.PartyConfig(k)
			set, err := protect.Build(pc.Protect, pc.Params, pc.Seed)
			if err != nil {
				return nil, fmt.Errorf("passive party %s: %w", names[k], err)
			}
			blocks = append(blocks, active.Block{Name: names[k], Lo: cols[k][0], Hi: cols[k][1], Protector: set.Protector})
		}
	}
	aud, err := cfg.NewAuditor()
	if err != nil {
		return nil, err
	}
	views := auditedViews(len(bottoms))
	var audits []rundir.PartyAudit
	for _, members := range views {
		pa, err := cfg.NewAuditor()
		if err != nil {
			return nil, err
		}
		var mn []string
		for _, k := range members {
			mn = append(mn, names[k])
		}
		audits = append(audits, rundir.PartyAudit{Name: strings.Join(mn, "+"), Members: mn, Auditor: pa})
	}
	eval, err := av.evalRows()
	if err != nil {
		return nil, err
	}
	if val != nil && len(val.IDs) == 0 {
		val = nil
	}
	rec, err := openRecorder(cfg, opt, aSplit.Train)
	if err != nil {
		return nil, err
	}
	defer rec.Close()
	rec.SetParties(audits)
	grd, err := cfg.NewPartyGuard(names, cols)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	pr := &partyRun{cfg: &cfg, names: names, bottoms: bottoms, cols: cols, layers: audit.LayerNames(cfg.Cut), rec: rec, guard: grd,
		ctx: ctx, obs: make([]*passive.Observation, len(bottoms)), views: views, scratch: make([]*tensor.Matrix, 3*len(views))}
	sel := &selection{keep: cfg.Select == config.SelectBest, bottom: bottoms[0], top: top,
		others: &partySelection{names: names[1:], bottoms: bottoms[1:]}}
	partyAttacks, err := partyModelAttacks(&cfg, views, names, bottoms, pvs)
	if err != nil {
		return nil, err
	}
	onEval := func(res *active.EvalResult) error {
		// The passive parties wait for the answer to their last
		// evaluation message meanwhile: the model attacks may use their
		// bottoms.
		figs, err := partyAttacks()
		if err != nil {
			return fmt.Errorf("evaluation at step %d: %w", res.Step, err)
		}
		rec.SetPartyAttacks(figs)
		e, err := rec.Eval(res)
		if err != nil {
			return err
		}
		if err := sel.observe(rec, e); err != nil {
			return err
		}
		return grd.Eval(e.Step, e.PassiveGain)
	}
	acfg, pcfg, err := partyConfigs(&cfg, def, wide, val, rec)
	if err != nil {
		return nil, err
	}
	acfg.Observer, acfg.EvalObserver, acfg.Blocks = pr.active, onEval, blocks
	act, err := active.New(top, aSplit.Train, eval, sched, agg.Width(widths), acfg)
	if err != nil {
		return nil, err
	}
	pas := make([]*passive.Passive, len(bottoms))
	for k, b := range bottoms {
		pEval, err := pvs[k].evalRows()
		if err != nil {
			return nil, err
		}
		pk := pcfg
		pk.Observer = pr.passive(k)
		if pas[k], err = passive.New(b,
			passive.Split{IDs: pvs[k].train.IDs, X: pvs[k].train.X},
			passive.Split{IDs: pEval.IDs, X: pEval.X}, sched, pk); err != nil {
			return nil, fmt.Errorf("passive party %s: %w", names[k], err)
		}
	}
	rec.Start(aSplit, aud, pas[0].TotalSteps())

	var size int64
	for k, b := range bottoms {
		var t model.Top
		if k == 0 {
			t = top
		}
		n, err := partyModelBytes(b, t)
		if err != nil {
			return nil, err
		}
		size += n
	}
	reserve, err := atomicfile.Reserve(cfg.Out, size+reserveSlack)
	if err != nil {
		return nil, err
	}
	defer reserve.Release()

	pConns := make([]transport.PassiveConn, len(bottoms))
	aConns := make([]transport.ActiveConn, len(bottoms))
	for k := range pConns {
		pConns[k], aConns[k] = inproc.Pipe()
	}
	joined, err := fanin.Join(aConns, agg, widths)
	if err != nil {
		return nil, err
	}
	activeErr := make(chan error, 1)
	go func() {
		err := act.Serve(ctx, joined)
		if err != nil {
			cancel(err)
		}
		activeErr <- err
	}()
	start := time.Now()
	perrs := make([]error, len(pas))
	var wg sync.WaitGroup
	for k := range pas {
		wg.Add(1)
		go func() {
			defer wg.Done()
			perrs[k] = pas[k].Run(ctx, pConns[k])
			if perrs[k] != nil {
				cancel(fmt.Errorf("passive party %s: %w", names[k], perrs[k]))
			}
			pConns[k].Close()
		}()
	}
	wg.Wait()
	aerr := <-activeErr
	elapsed := time.Since(start)
	runErr := aerr
	if runErr == nil {
		for k, perr := range perrs {
			if perr != nil {
				runErr = fmt.Errorf("passive party %s: %w", names[k], perr)
				if pr.err != nil {
					runErr = pr.err
				}
				break
			}
		}
	}
	if runErr == nil {
		runErr = reserve.Release()
	}
	return finishRun(ctx, cfg, opt, rec, reserve, sel, pas[0].Step(), pas[0].Stopped(), elapsed, runErr, gateWeightsLog(opt, top, names))
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

// partyModelBytes is the size of a saved bottom (and top, when not nil).
func partyModelBytes(b model.Bottom, t model.Top) (int64, error) {
	var n counter
	if err := b.Save(&n); err != nil {
		return 0, err
	}
	if t != nil {
		if err := t.Save(&n); err != nil {
			return 0, err
		}
	}
	return int64(n), nil
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
