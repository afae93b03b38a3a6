package step

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/splitguard/splitguard/config"
	"github.com/splitguard/splitguard/data"
	"github.com/splitguard/splitguard/party/active"
	"github.com/splitguard/splitguard/party/passive"
	"github.com/splitguard/splitguard/protect"
	"github.com/splitguard/splitguard/schedule"
	"github.com/splitguard/splitguard/transport"
	"github.com/splitguard/splitguard/transport/grpcnet"
	"github.com/splitguard/splitguard/transport/inproc"
	"github.com/splitguard/splitguard/transport/wire"
)

// DefenceSpec is the shape of the per-defence cost benchmark.
type DefenceSpec struct {
	// Batch is the rows per training batch (1024).
	Batch int
	// Steps are the timed steps (the median is reported), after Warmup
	// untimed ones.
	Steps, Warmup int
	// Model is the configuration's model ("wdl" or "mlp"): the default
	// configuration's layers on in-memory synthetic Criteo-shaped rows.
	Model string
	Seed  uint64
}

// DefenceCost is one defence's cost per training step.
type DefenceCost struct {
	// Defence is the registry name, Setting its legend at Params (the
	// setting timed: protect.BenchParams).
	Defence string         `json:"defence"`
	Setting string         `json:"setting"`
	Params  protect.Params `json:"params"`
	// MSPerStep is the median wall time of a full split step (passive
	// forward, the exchange, the active party's step with the defence,
	// passive backward and both optimisers); Ratio divides it by the
	// median of "none".
	MSPerStep float64 `json:"ms_per_step"`
	Ratio     float64 `json:"ratio_to_none"`
	// SetupMS is the time to build the models and the defences (e.g.
	// training CAE's autoencoder), paid once per run.
	SetupMS float64 `json:"setup_ms"`
	// BytesForward (passive → active) and BytesBackward (active →
	// passive) are the mean bytes per training step of the messages the
	// step exchanged, as the network transport encodes them
	// (grpcnet.WireBytes: protobuf plus gRPC's message header).
	BytesForward  float64 `json:"bytes_passive_to_active"`
	BytesBackward float64 `json:"bytes_active_to_passive"`
}

// Defences times a split training step with every registered defence —
// the gradient protections and the add-ons, each alone at its bench
// setting — and returns one row per defence, the reference
// (protect.Reference, "none") first. The defences'
// runs take their steps in turns, one step each, so that a machine whose
// load changes slows them all alike.
func Defences(ctx context.Context, spec DefenceSpec) ([]DefenceCost, error) {
	if spec.Batch < 1 || spec.Steps < 1 || spec.Warmup < 0 {
		return nil, fmt.Errorf("step: defence benchmark: batch %d and steps %d must be positive, warm-up %d non-negative", spec.Batch, spec.Steps, spec.Warmup)
	}
	specs, ref := protect.Specs(), protect.Reference()
	slices.SortStableFunc(specs, func(a, b *protect.Spec) int { // the reference first
		switch {
		case a.Name == ref && b.Name != ref:
			return -1
		case b.Name == ref && a.Name != ref:
			return 1
		}
		return 0
	})
	if len(specs) == 0 || specs[0].Name != ref {
		return nil, errors.New("step: defence benchmark: no reference protection (protect.Reference) first")
	}
	split, err := loadDefenceData(spec)
	if err != nil {
		return nil, fmt.Errorf("step: defence benchmark: %w", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	runs := make([]*defenceRun, len(specs))
	for i, s := range specs {
		name, params := protect.Reference(), protect.BenchParams(s)
		if s.Role == protect.GradientRole {
			name = s.Name
		}
		r, err := startDefence(ctx, spec, name, params, split)
		if err != nil {
			return nil, fmt.Errorf("step: defence %s at %v (a Spec's Bench field sets the benchmark's setting): %w", s.Name, params, err)
		}
		r.cost.Defence = s.Name
		runs[i] = r
	}
	total := spec.Warmup + spec.Steps + 1
	for range total {
		for _, r := range runs {
			if err := r.step(); err != nil {
				return nil, fmt.Errorf("step: defence %s: %w", r.cost.Defence, err)
			}
		}
	}
	out := make([]DefenceCost, len(runs))
	for i, r := range runs {
		if err := r.finish(spec); err != nil {
			return nil, fmt.Errorf("step: defence %s: %w", r.cost.Defence, err)
		}
		out[i] = r.cost
		out[i].Ratio = r.cost.MSPerStep / runs[0].cost.MSPerStep
	}
	return out, nil
}

// defenceRun is one defence's in-process run, its passive party held
// before every training exchange until step lets it go.
type defenceRun struct {
	cost    DefenceCost
	m       *meter
	waiting bool          // the passive party waits at an exchange
	end     chan struct{} // closed when both parties have ended; err is then set
	err     error
}

// defenceConfig is the configuration of the benchmark's run of gradient
// protection name with parameters p on trainRows training rows (0: before
// the data is loaded).
func defenceConfig(spec DefenceSpec, name string, p protect.Params, trainRows int) (*config.Config, error) {
	cfg := config.Default()
	if spec.Model != "" {
		cfg.Model = spec.Model
	}
	cfg.Protect, cfg.Params, cfg.Seed = name, p, spec.Seed
	cfg.Batch, cfg.Epochs = spec.Batch, 1
	// Enough rows that every timed step is a full batch of the first epoch
	// (the synthetic data holds out a tenth for testing).
	cfg.SynthRows = (spec.Warmup+spec.Steps+2)*spec.Batch*10/9 + spec.Batch
	cfg.ValFrac, cfg.Baseline, cfg.EvalEvery, cfg.EarlyStop = 0, false, 0, 0
	cfg.Out = "bench" // Validate wants one; nothing is written
	cfg.Resolve()
	if trainRows > 0 {
		cfg.ResolveForData(trainRows)
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &cfg, nil
}

// loadDefenceData generates the benchmark's synthetic rows.
func loadDefenceData(spec DefenceSpec) (*data.Split, error) {
	cfg, err := defenceConfig(spec, protect.Reference(), nil, 0)
	if err != nil {
		return nil, err
	}
	split, err := cfg.LoadData()
	if err != nil {
		return nil, err
	}
	split.SortByID()
	return split, nil
}

// startDefence builds the run of gradient protection name with parameters
// p and starts both parties; the passive party computes the first batch's
// embedding and waits.
func startDefence(ctx context.Context, spec DefenceSpec, name string, p protect.Params, split *data.Split) (*defenceRun, error) {
	cfg, err := defenceConfig(spec, name, p, len(split.Train.IDs))
	if err != nil {
		return nil, err
	}
	total := spec.Warmup + spec.Steps + 1 // a step's time ends where the next begins
	sched, err := schedule.New(len(split.Train.IDs), cfg.Batch, cfg.Seed)
	if err != nil {
		return nil, err
	}
	epochs := (total + sched.BatchesPerEpoch() - 1) / sched.BatchesPerEpoch()
	t0 := time.Now()
	bottom, top, wide, err := cfg.BuildModels(split.Train.X)
	if err != nil {
		return nil, err
	}
	def, err := cfg.BuildDefences(split.Train)
	if err != nil {
		return nil, err
	}
	setup := time.Since(t0)
	act, err := active.New(top, split.Train, split.Test, sched, bottom.CutDim(), active.Config{
		Protector: def.Protector, Loss: def.Loss, TrainLabels: def.TrainLabels, TrainTargets: def.TrainTargets,
		Wide: wide, Seed: cfg.Seed,
	})
	if err != nil {
		return nil, err
	}
	// No evaluation split on the passive side: only training messages.
	pas, err := passive.New(bottom, passive.Split{IDs: split.Train.IDs, X: split.Train.X}, passive.Split{},
		sched, passive.Config{Epochs: epochs, MaxSteps: int64(total)})
	if err != nil {
		return nil, err
	}
	pConn, aConn := inproc.Pipe()
	r := &defenceRun{
		cost: DefenceCost{Setting: protect.Describe(name, p).Text, Params: p, SetupMS: float64(setup.Nanoseconds()) / 1e6},
		m:    &meter{conn: pConn, arrived: make(chan struct{}), gate: make(chan struct{})},
		end:  make(chan struct{}),
	}
	served := make(chan error, 1)
	go func() { served <- act.Serve(ctx, aConn) }()
	go func() {
		perr := pas.Run(ctx, r.m)
		close(r.m.arrived)
		r.err = cmp.Or(<-served, perr)
		close(r.end)
	}()
	return r, nil
}

// step lets the passive party make its next exchange and waits until it
// has computed the following batch's embedding (or ended), so that no two
// runs compute at once.
func (r *defenceRun) step() error {
	if !r.waiting {
		if _, ok := <-r.m.arrived; !ok {
			return r.ended()
		}
		r.waiting = true
	}
	select {
	case r.m.gate <- struct{}{}:
	case <-r.end:
		return r.ended()
	}
	if _, ok := <-r.m.arrived; !ok {
		r.waiting = false
		<-r.end
		return r.err
	}
	return nil
}

// ended returns why the run ended before its last step.
func (r *defenceRun) ended() error {
	<-r.end
	if r.err != nil {
		return r.err
	}
	return errors.New("the run ended early")
}

// finish waits for the run's end and fills in its times and bytes.
func (r *defenceRun) finish(spec DefenceSpec) error {
	for range r.m.arrived { // the run's end closes it
	}
	<-r.end
	if r.err != nil {
		return r.err
	}
	m := r.m
	total := spec.Warmup + spec.Steps + 1
	if len(m.arrivals) != total {
		return fmt.Errorf("%d training exchanges, want %d", len(m.arrivals), total)
	}
	ms := make([]float64, 0, spec.Steps)
	for i := spec.Warmup; i < total-1; i++ {
		d := m.arrivals[i+1].Sub(m.released[i]) - m.metering[i]
		ms = append(ms, float64(d.Nanoseconds())/1e6)
	}
	var fwd, bwd float64
	for i := range m.fwd {
		fwd += float64(m.fwd[i])
		bwd += float64(m.bwd[i])
	}
	n := float64(len(m.fwd))
	r.cost.MSPerStep, r.cost.BytesForward, r.cost.BytesBackward = Median(ms), fwd/n, bwd/n
	return nil
}

// meter is a passive connection that holds every training exchange until
// it is let go (gate) and records the bytes the network transport would
// carry for it. A step's time runs from the release of its exchange to
// the arrival of the next one — the answer, the passive backward pass and
// update, and the next batch's forward pass, one full step of work — less
// the time the meter spends counting bytes.
type meter struct {
	conn               transport.PassiveConn
	arrived, gate      chan struct{}
	arrivals, released []time.Time
	metering           []time.Duration
	fwd, bwd           []int64
}

func (m *meter) Exchange(ctx context.Context, f *transport.Forward) (*transport.Backward, error) {
	if f.Phase != transport.Train {
		return m.conn.Exchange(ctx, f)
	}
	m.arrivals = append(m.arrivals, time.Now())
	select {
	case m.arrived <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	select {
	case <-m.gate:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	m.released = append(m.released, time.Now())
	b, err := m.conn.Exchange(ctx, f)
	if err != nil {
		return b, err
	}
	t0 := time.Now()
	nf, nb, err := grpcnet.WireBytes(f, b, wire.Encodings{})
	if err != nil {
		return nil, err
	}
	m.fwd, m.bwd = append(m.fwd, nf), append(m.bwd, nb)
	m.metering = append(m.metering, time.Since(t0))
	return b, nil
}

func (m *meter) Close() error { return m.conn.Close() }

// Median returns the middle value of v (the mean of the two middle ones
// for an even count; NaN when empty); v is sorted in place.
func Median(v []float64) float64 {
	if len(v) == 0 {
		return math.NaN()
	}
	slices.Sort(v)
	n := len(v)
	if n%2 == 1 {
		return v[n/2]
	}
	return (v[n/2-1] + v[n/2]) / 2
}
