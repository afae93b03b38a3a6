package netrun

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/splitguard/splitguard/config"
	"github.com/splitguard/splitguard/data"
	"github.com/splitguard/splitguard/internal/buf"
	"github.com/splitguard/splitguard/model"
	"github.com/splitguard/splitguard/nn"
	"github.com/splitguard/splitguard/psi"
	"github.com/splitguard/splitguard/rundir"
	"github.com/splitguard/splitguard/tensor"
	"github.com/splitguard/splitguard/transport"
	"github.com/splitguard/splitguard/transport/grpcnet"
)

// ServeOptions are the inference settings of the active party.
type ServeOptions struct {
	// Model is the trained top model (default RUNDIR/top.model, where
	// RUNDIR is the training config's Out).
	Model string
	// Out is the CSV file (id,score) the active writes the scores of a
	// session to; session k > 1 of one Serve writes Out.k. Empty: not
	// written (only sensible with ShareScores).
	Out string
	// ShareScores returns the scores to the passive party.
	ShareScores bool
	// Sessions is the number of scoring sessions to serve before Serve
	// returns, 1 to MaxServeSessions. Each session runs a PSI over the
	// active party's IDs, which tells the peer which of its IDs the active
	// holds: an unbounded number would be an unbounded membership oracle.
	Sessions int
	// SessionInterval is the least time between the starts of two
	// sessions (DefaultSessionInterval when 0), which bounds the rate of
	// PSI queries.
	SessionInterval time.Duration
}

// MaxServeSessions bounds ServeOptions.Sessions.
const MaxServeSessions = 1000

// DefaultSessionInterval is the least time between two scoring sessions'
// starts when ServeOptions leaves it 0.
const DefaultSessionInterval = 10 * time.Second

// ServeResult reports the sessions an active party served.
type ServeResult struct {
	Sessions int   // sessions completed
	Scored   int64 // rows scored, over all sessions
	Files    []string
}

// serveRun is the state of an active party serving scoring sessions.
type serveRun struct {
	cfg  Config
	so   ServeOptions
	top  model.Top
	wide bool
	// rows maps every ID the active holds to its split and row.
	rows map[uint64]rowRef
	pd   *partyData
	res  ServeResult
	done chan struct{} // receives nothing; closed when Sessions are served

	mu        sync.Mutex
	responder *psi.StreamResponder
	started   time.Time // when the current session started
	common    []uint64  // intersection of the current session
	lastID    uint64
	any       bool
	ids       []uint64
	scores    []float32
	finished  bool // the current session's last batch was scored
	batch     data.Batch
	probs     []float32
}

// Serve runs the active party's inference server: it loads the top model
// and its data file (cfg as trained; cfg.Data may name another file, which
// is encoded with the training data's encoding, see loadForScoring),
// listens on cfg.Addr and serves so.Sessions scoring
// sessions (see the package's inference notes).
func Serve(ctx context.Context, cfg Config, so ServeOptions, opt Options) (*ServeResult, error) {
	cfg.Resolve()
	if so.Sessions < 1 || so.Sessions > MaxServeSessions {
		return nil, config.Keyed(fmt.Errorf("active serve: key sessions %d outside [1, %d]: every session answers a private set intersection over this party's IDs, so their number is bounded", so.Sessions, MaxServeSessions), "sessions")
	}
	if so.SessionInterval <= 0 {
		so.SessionInterval = DefaultSessionInterval
	}
	if err := cfg.prepare("active serve", opt); err != nil {
		return nil, err
	}
	if so.Out == "" && !so.ShareScores {
		return nil, errors.New("active serve: nowhere for the scores: no output file (ServeOptions.Out) and no sharing with the passive party (ServeOptions.ShareScores)")
	}
	log := opt.logger().With("party", "active", "mode", "serve")
	pd, err := loadForScoring(&cfg, cfg.Out, log.Warn)
	if err != nil {
		return nil, fmt.Errorf("active serve: %w", err)
	}
	top, wide, err := cfg.BuildTop(pd.split.Train.X)
	if err != nil {
		return nil, fmt.Errorf("active serve: %w", err)
	}
	if so.Model == "" {
		so.Model = filepath.Join(cfg.Out, rundir.TopModelFile)
	}
	if err := readModel(so.Model, func(r *bufio.Reader) error { return top.Load(r) }); err != nil {
		return nil, fmt.Errorf("active serve: %w", err)
	}
	r := &serveRun{cfg: cfg, so: so, top: top, wide: wide, pd: pd, rows: map[uint64]rowRef{}, done: make(chan struct{})}
	for i, id := range pd.split.Train.IDs {
		r.rows[id] = rowRef{row: i}
	}
	for i, id := range pd.split.Test.IDs {
		r.rows[id] = rowRef{test: true, row: i}
	}
	log.Info("model and data loaded", "model", so.Model, "rows", len(r.rows), "share_scores", so.ShareScores)

	srv, err := listen(&cfg, opt, grpcnet.Handlers{Hello: r.hello, PSI: r.psi, Score: r.score,
		Shutdown: func(_ context.Context, reason string) error { return r.shutdown(reason, log) }}, "active serve", pd.split.Info.IDFormat.String())
	if err != nil {
		return nil, err
	}
	defer srv.Close()
	if opt.Ready != nil {
		opt.Ready(srv.Addr())
	}
	select {
	case <-r.done:
	case <-ctx.Done():
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	res := r.res
	if so.Sessions > 0 && res.Sessions < so.Sessions {
		return &res, fmt.Errorf("active serve: stopped after %d of %d sessions: %w", res.Sessions, so.Sessions, ctx.Err())
	}
	return &res, nil
}

// hello starts a scoring session, at most one per SessionInterval.
func (r *serveRun) hello(_ context.Context, peer transport.Hello) error {
	r.mu.Lock()
	if wait := r.so.SessionInterval - time.Since(r.started); !r.started.IsZero() && wait > 0 {
		r.mu.Unlock()
		return config.Keyed(fmt.Errorf("active serve: scoring sessions start at most once per %v (key session_interval); try again in %v", r.so.SessionInterval, wait.Round(time.Second)), "session_interval")
	}
	r.started = time.Now()
	r.mu.Unlock()
	ids := make([]uint64, 0, len(r.rows))
	for id := range r.rows {
		ids = append(ids, id)
	}
	resp, err := newResponder(ids)
	if err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.responder != nil {
		_ = r.responder.Close()
	}
	r.responder, r.common, r.any, r.ids, r.scores, r.finished = resp, nil, false, r.ids[:0], r.scores[:0], false
	return nil
}

func (r *serveRun) psi(_ context.Context, req *psi.Request) (*psi.Response, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	resp, common, err := respondPSI("active serve", r.responder, req)
	if err != nil {
		return nil, err
	}
	if common != nil {
		r.common = common
	}
	return resp, nil
}

// score validates and scores one batch: every ID in the intersection,
// ascending across the session (so none is scored twice), the embedding
// of the cut width.
func (r *serveRun) score(_ context.Context, b *transport.ScoreBatch) (*transport.ScoreResult, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	where := fmt.Sprintf("score batch %d", b.Batch)
	switch {
	case r.common == nil:
		return nil, fmt.Errorf("%s before the ID alignment", where)
	case r.finished:
		return nil, fmt.Errorf("%s after the session's last batch", where)
	case b.Embedding.Cols != r.cfg.CutDim():
		return nil, fmt.Errorf("%s: embedding width %d, the model's cut width is %d", where, b.Embedding.Cols, r.cfg.CutDim())
	}
	rows := make([]rowRef, len(b.IDs))
	for i, id := range b.IDs {
		if r.any && id <= r.lastID {
			return nil, fmt.Errorf("%s: example ID %d is not above the previous one (%d): IDs are sent once, in ascending order", where, id, r.lastID)
		}
		if _, ok := slices.BinarySearch(r.common, id); !ok {
			return nil, fmt.Errorf("%s: example ID %d is not in the ID intersection", where, id)
		}
		r.lastID, r.any = id, true
		rows[i] = r.rows[id]
	}
	var wide *data.Batch
	if r.wide {
		r.gather(rows)
		wide = &r.batch
	}
	logits, err := r.top.Forward(b.Embedding, wide)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	r.probs = buf.Grow(r.probs, len(logits))
	nn.Sigmoid(r.probs, logits)
	if err := tensor.CheckFinite(where+": scores", &tensor.Matrix{Rows: 1, Cols: len(r.probs), Data: r.probs}); err != nil {
		return nil, err
	}
	r.ids = append(r.ids, b.IDs...)
	r.scores = append(r.scores, r.probs...)
	res := &transport.ScoreResult{Batch: b.Batch, Scored: len(b.IDs)}
	if r.so.ShareScores {
		res.Scores = slices.Clone(r.probs)
	}
	if b.Last {
		if len(r.ids) != len(r.common) {
			return nil, fmt.Errorf("%s is the last but only %d of the %d intersection rows were sent", where, len(r.ids), len(r.common))
		}
		r.finished = true
	}
	return res, nil
}

// gather copies the active's features of rows (either split) into r.batch.
func (r *serveRun) gather(rows []rowRef) {
	gatherRows(r.pd.split, rows, &r.batch)
}

// shutdown ends a session: a complete one has its scores written.
func (r *serveRun) shutdown(reason string, log interface{ Info(string, ...any) }) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if reason != "" || !r.finished {
		log.Info("scoring session ended without completing", "reason", reason, "scored", len(r.ids))
		r.common, r.finished = nil, false
		return nil
	}
	r.res.Sessions++
	r.res.Scored += int64(len(r.ids))
	if r.so.Out != "" {
		path := r.so.Out
		if r.res.Sessions > 1 {
			path += "." + strconv.Itoa(r.res.Sessions)
		}
		if err := writeScores(path, r.ids, r.scores); err != nil {
			return err
		}
		r.res.Files = append(r.res.Files, path)
		log.Info("scores written", "file", path, "rows", len(r.ids))
	}
	r.common, r.finished = nil, false
	if r.so.Sessions > 0 && r.res.Sessions >= r.so.Sessions {
		close(r.done)
	}
	return nil
}
