package run

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/splitguard/splitguard/audit"
	"github.com/splitguard/splitguard/config"
	"github.com/splitguard/splitguard/data"
	"github.com/splitguard/splitguard/model"
	"github.com/splitguard/splitguard/party/active"
	"github.com/splitguard/splitguard/party/passive"
	"github.com/splitguard/splitguard/protect"
	"github.com/splitguard/splitguard/rundir"
	"github.com/splitguard/splitguard/tensor"
	"github.com/splitguard/splitguard/transport"
	"github.com/splitguard/splitguard/transport/fanin"
	"github.com/splitguard/splitguard/transport/inproc"
)

// multiRun is a run with several passive parties (trainParties): the
// shared runBase, every party's view and model, how the parties' blocks
// join at the cut, the audited subsets, and the parties and their
// connections.
type multiRun struct {
	runBase
	pvs     []*view
	av      *view
	names   []string
	bottoms []model.Bottom
	top     model.Top
	wide    bool

	agg    fanin.Aggregation
	widths []int          // each party's cut width
	cols   [][2]int       // each party's columns of the combined embedding
	blocks []active.Block // each party's protection of its block (none under aggregation sum)
	views  [][]int        // the audited subsets (auditedViews)

	partyAttacks func() (map[string]map[string]float64, error)

	cheat *partyCheat // the cheating passive party (key cheater), nil if none

	pr     *partyRun
	act    *active.Active
	pas    []*passive.Passive
	pConns []transport.PassiveConn
	joined transport.ActiveConn
}

// setUp logs who holds which columns and builds the models, each party's
// protection of its block, the run's shared parts (runBase.open), an
// auditor per audited subset, the model selection and the model attacks
// on every subset.
func (m *multiRun) setUp() error {
	cfg := m.cfg
	m.names = cfg.PartyNames()
	pxs := make([]*data.Features, len(m.pvs))
	for k, v := range m.pvs {
		logf(m.opt.logger(), "passive party %s holds %v", m.names[k], v.train.X.ColumnNames())
		pxs[k] = v.train.X
	}
	logf(m.opt.logger(), "the active party holds %v; aggregation %s", m.av.train.X.ColumnNames(), cfg.AggregationOr())
	var err error
	if m.bottoms, m.top, m.wide, err = cfg.BuildPartyModels(pxs, m.av.train.X); err != nil {
		return err
	}
	if err := m.buildBlocks(); err != nil {
		return err
	}
	if err := m.open(m.av); err != nil {
		return err
	}
	m.views = auditedViews(len(m.bottoms))
	if err := m.auditSubsets(); err != nil {
		return err
	}
	m.sel = &selection{keep: cfg.Select == config.SelectBest, bottom: m.bottoms[0], top: m.top,
		others: &partySelection{names: m.names[1:], bottoms: m.bottoms[1:]}}
	if m.partyAttacks, err = partyModelAttacks(cfg, m.views, m.names, m.bottoms, m.pvs); err != nil {
		return err
	}
	m.cheat, err = newPartyCheat(cfg, m.pvs, m.av)
	return err
}

// buildBlocks places each party's block in the combined embedding under
// the aggregation and, unless it is sum, builds each party's protection
// of its block of the gradient.
func (m *multiRun) buildBlocks() error {
	m.agg = fanin.Aggregation(m.cfg.AggregationOr())
	m.widths = make([]int, len(m.bottoms))
	for k, b := range m.bottoms {
		m.widths[k] = b.CutDim()
	}
	m.cols = m.agg.Blocks(m.widths)
	if m.agg == fanin.Sum {
		return nil
	}
	for k := range m.bottoms {
		pc := m.cfg.PartyConfig(k)
		set, err := protect.Build(pc.Protect, pc.Params, pc.Seed)
		if err != nil {
			return fmt.Errorf("passive party %s: %w", m.names[k], err)
		}
		m.blocks = append(m.blocks, active.Block{Name: m.names[k], Lo: m.cols[k][0], Hi: m.cols[k][1], Protector: set.Protector})
	}
	return nil
}

// auditSubsets gives the recorder an auditor for every audited subset of
// the passive parties, named by its members joined with "+".
func (m *multiRun) auditSubsets() error {
	audits, err := rundir.NewPartyAudits(m.names, m.views, m.cfg.NewAuditor)
	if err != nil {
		return err
	}
	m.rec.SetParties(audits)
	return nil
}

// buildParties builds the active party and every passive party, each
// with its observer in the partyRun that records the steps (stopped by
// ctx), connects them (one pipe each, joined at the active), and starts
// the recorder.
func (m *multiRun) buildParties(ctx context.Context) error {
	n := len(m.bottoms)
	if err := m.grd.SetParties(m.names, m.cols); err != nil {
		return err
	}
	m.pr = &partyRun{cfg: m.cfg, names: m.names, bottoms: m.bottoms, cols: m.cols, layers: audit.LayerNames(m.cfg.Cut),
		rec: m.rec, guard: m.grd, ctx: ctx, obs: make([]*passive.Observation, n), views: m.views, scratch: make([]*tensor.Matrix, 3*len(m.views))}
	acfg, pcfg, err := partyConfigs(m.cfg, m.def, m.wide, m.val, m.rec)
	if err != nil {
		return err
	}
	acfg.Observer, acfg.EvalObserver, acfg.Blocks = m.pr.active, m.onEval, m.blocks
	if m.act, err = active.New(m.top, m.av.train, m.eval, m.sched, m.agg.Width(m.widths), acfg); err != nil {
		return err
	}
	m.pas = make([]*passive.Passive, n)
	for k, b := range m.bottoms {
		pEval, err := m.pvs[k].evalRows()
		if err != nil {
			return err
		}
		pk := pcfg
		pk.Observer = m.pr.passive(k)
		m.cheat.configure(k, &pk)
		if m.opt.sent != nil {
			pk.Send = &shownSender{inner: pk.Send, party: k, show: m.opt.sent}
		}
		if m.pas[k], err = passive.New(b,
			passive.Split{IDs: m.pvs[k].train.IDs, X: m.pvs[k].train.X},
			passive.Split{IDs: pEval.IDs, X: pEval.X}, m.sched, pk); err != nil {
			return fmt.Errorf("passive party %s: %w", m.names[k], err)
		}
	}
	m.rec.Start(m.av.split(), m.aud, m.pas[0].TotalSteps())
	m.pConns = make([]transport.PassiveConn, n)
	aConns := make([]transport.ActiveConn, n)
	for k := range m.pConns {
		m.pConns[k], aConns[k] = inproc.Pipe()
	}
	m.joined, err = fanin.Join(aConns, m.agg, m.widths)
	return err
}

// onEval records an evaluation round at the active party: the model
// attacks on every audited subset, the record, the selection and the
// guard.
func (m *multiRun) onEval(res *active.EvalResult) error {
	// The passive parties wait for the answer to their last evaluation
	// message meanwhile: the model attacks may use their bottoms.
	figs, err := m.partyAttacks()
	if err != nil {
		return fmt.Errorf("evaluation at step %d: %w", res.Step, err)
	}
	m.rec.SetPartyAttacks(figs)
	e, err := m.rec.Eval(res)
	if err != nil {
		return err
	}
	return m.evaluated(e)
}

// train runs the steps: the active party and every passive party on a
// goroutine of its own, the first to fail stopping the others (cancel,
// with its error as the cause). It returns the training's wall time and
// the first error (the active's, else the first failed passive's, or the
// recording's error behind it); with none, it gives back the disk space
// held.
func (m *multiRun) train(ctx context.Context, cancel context.CancelCauseFunc) (time.Duration, error) {
	activeErr := serveActive(ctx, m.act, m.joined, cancel)
	start := time.Now()
	perrs := make([]error, len(m.pas))
	var wg sync.WaitGroup
	for k := range m.pas {
		wg.Add(1)
		go func() {
			defer wg.Done()
			perrs[k] = m.pas[k].Run(ctx, m.pConns[k])
			if perrs[k] != nil {
				cancel(fmt.Errorf("passive party %s: %w", m.names[k], perrs[k]))
			}
			m.pConns[k].Close()
		}()
	}
	wg.Wait()
	aerr := <-activeErr
	elapsed := time.Since(start)
	runErr := aerr
	if runErr == nil {
		for k, perr := range perrs {
			if perr != nil {
				runErr = fmt.Errorf("passive party %s: %w", m.names[k], perr)
				if m.pr.err != nil {
					runErr = m.pr.err
				}
				break
			}
		}
	}
	if runErr == nil {
		runErr = m.reserve.Release()
	}
	return elapsed, runErr
}
