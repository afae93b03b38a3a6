package netrun

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"

	"log/slog"

	"github.com/splitguard/splitguard/atomicfile"
	"github.com/splitguard/splitguard/data"
	"github.com/splitguard/splitguard/model"
	"github.com/splitguard/splitguard/nn"
	"github.com/splitguard/splitguard/psi"
	"github.com/splitguard/splitguard/rundir"
	"github.com/splitguard/splitguard/tensor"
	"github.com/splitguard/splitguard/transport/grpcnet"
)

// Inference.
//
// `splitguard active serve` (Serve) loads the trained top model and its
// own data file and answers scoring sessions; `splitguard passive score`
// (Score) loads the trained bottom model and the rows to score. The run
// directory is a networked party's or an in-process `train` run's (which
// holds both models); each party encodes its file with the training
// data's encoding saved there (rundir.EncodingFile). A session is: Hello (the fingerprint of the training configuration, so both models
// come from the same run's settings), PSI over the IDs to score (the
// passive's) and every ID the active holds, so that neither learns the
// other's IDs outside the intersection; then the passive sends the
// embeddings of the intersection rows in ascending ID order, in batches of
// EvalBatch rows, and the active scores them with its wide features of the
// same IDs. Rows the active does not hold are not scored: the passive
// reports them (count, and their IDs with --unscored).
//
// Who gets the scores: the active party (the label party, e.g. the
// advertiser) uses them and writes them (--out). It returns them to the
// passive only when its operator allows it (--share-scores): predictions
// of a model fitted to the labels are a noisy copy of the labels (on the
// training examples, nearly the labels themselves), which is exactly what
// the gradient protection keeps from the passive party during training.
// Without --share-scores the passive learns only how many rows were scored.

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
	// returns (0: until ctx is cancelled).
	Sessions int
}

// ServeResult reports the sessions an active party served.
type ServeResult struct {
	Sessions int   // sessions completed
	Scored   int64 // rows scored, over all sessions
	Files    []string
}

// ScoreOptions are the inference settings of the passive party.
type ScoreOptions struct {
	// Model is the trained bottom model (default RUNDIR/bottom.model).
	Model string
	// Split selects the rows of the data file to score: "test" (the
	// default: the held-out split of the training options), "train" or
	// "all".
	Split string
	// Out is the CSV file (id,score) for the scores, if the active party
	// shares them.
	Out string
	// Unscored, when set, receives the IDs the active party does not hold
	// (one per line).
	Unscored string
}

// ScoreResult reports a passive scoring session.
type ScoreResult struct {
	Rows     int  // rows selected for scoring
	Scored   int  // rows scored (the PSI intersection)
	Unscored int  // rows the active party does not hold
	Shared   bool // the active party returned the scores (written to Out)
	Stats    grpcnet.Stats
}

// loadForScoring loads cfg's data file to score it (without labels: the
// passive has none and serving needs none). With the training data's
// encoding in runDir (rundir.EncodingFile) the file is encoded with it:
// values unseen in training map to the out-of-vocabulary id, dense values
// are scaled with the training range, a column of the encoding that the
// file lacks is an error naming it, and no row is sampled away. A run directory without it (from
// before it was written) falls back to the training options, refusing a
// file whose legacy encoding summary differs.
func loadForScoring(cfg *Config, runDir string, log func(msg string, args ...any)) (*partyData, error) {
	path := filepath.Join(runDir, rundir.EncodingFile)
	enc, err := data.LoadEncoding(path)
	switch {
	case err == nil:
		// Inference scores every row of the file: the training run's
		// --sample chose which rows to train on, not which to score. Both
		// parties load this way, so their rows still agree.
		all := *cfg
		all.Sample = 1
		pd, err := loadPartyWith(&all, enc)
		if err != nil {
			return nil, fmt.Errorf("encoding %s with the training encoding %s: %w", cfg.Data, path, err)
		}
		var oov []any
		for _, c := range pd.split.Info.Columns {
			if c.OOV > 0 {
				oov = append(oov, c.Name, c.OOV)
			}
		}
		if len(oov) > 0 {
			log("rows with values not seen in training (scored with the out-of-vocabulary id)", oov...)
		}
		return pd, nil
	case !errors.Is(err, os.ErrNotExist):
		return nil, err
	}
	pd, err := loadParty(cfg, false)
	if err != nil {
		return nil, err
	}
	ok, err := checkEncoding(runDir, &pd.split.Info)
	if err != nil {
		return nil, err
	}
	if !ok {
		log("no encoding in the run directory; the data is encoded with the training options, unchecked", "dir", runDir)
	}
	return pd, nil
}

// readModel loads a saved model into m.
func readModel(path string, load func(*bufio.Reader) error) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := load(bufio.NewReader(f)); err != nil {
		return fmt.Errorf("model %s: %w (was it trained with this configuration?)", path, err)
	}
	return nil
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
	responder *psi.Responder
	common    []uint64 // intersection of the current session
	lastID    uint64
	any       bool
	ids       []uint64
	scores    []float32
	finished  bool // the current session's last batch was scored
	batch     data.Batch
	probs     []float32
}

type rowRef struct {
	test bool
	row  int
}

// Serve runs the active party's inference server: it loads the top model
// and its data file (cfg as trained; cfg.Data may name another file, which
// is encoded with the training data's encoding, see loadForScoring),
// listens on cfg.Addr and serves so.Sessions scoring
// sessions (see the package's inference notes).
func Serve(ctx context.Context, cfg Config, so ServeOptions, opt Options) (*ServeResult, error) {
	cfg.Resolve()
	if err := cfg.validate("active serve"); err != nil {
		return nil, err
	}
	if so.Out == "" && !so.ShareScores {
		return nil, errors.New("active serve: give --out FILE for the scores (or --share-scores to return them to the passive party)")
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
		Shutdown: func(_ context.Context, reason string) error { return r.shutdown(reason, log) }}, "active serve")
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

// hello starts a scoring session.
func (r *serveRun) hello(_ context.Context, peer grpcnet.Hello) error {
	ids := make([]uint64, 0, len(r.rows))
	for id := range r.rows {
		ids = append(ids, id)
	}
	resp, err := psi.NewResponder(psi.Uint64Keys(ids), nil)
	if err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
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
func (r *serveRun) score(_ context.Context, b *grpcnet.ScoreBatch) (*grpcnet.ScoreResult, error) {
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
	r.probs = grow(r.probs, len(logits))
	nn.Sigmoid(r.probs, logits)
	if err := tensor.CheckFinite(where+": scores", &tensor.Matrix{Rows: 1, Cols: len(r.probs), Data: r.probs}); err != nil {
		return nil, err
	}
	r.ids = append(r.ids, b.IDs...)
	r.scores = append(r.scores, r.probs...)
	res := &grpcnet.ScoreResult{Batch: b.Batch, Scored: len(b.IDs)}
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

// gatherRows copies the features of rows (of either split) into b.
func gatherRows(split *data.Split, rows []rowRef, b *data.Batch) {
	x := split.Train.X
	nc, nd := x.NumCat, x.NumDense
	b.Rows = len(rows)
	b.Cat = grow(b.Cat, len(rows)*nc)
	b.Dense = b.Dense.Resize(len(rows), nd)
	for i, ref := range rows {
		src := x
		if ref.test {
			src = split.Test.X
		}
		copy(b.Cat[i*nc:(i+1)*nc], src.Cat[ref.row*nc:(ref.row+1)*nc])
		copy(b.Dense.Row(i), src.Dense[ref.row*nd:(ref.row+1)*nd])
	}
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

// writeScores writes "id,score" lines (with a header) atomically.
func writeScores(path string, ids []uint64, scores []float32) error {
	b := []byte("id,score\n")
	for i, id := range ids {
		b = strconv.AppendUint(b, id, 10)
		b = append(b, ',')
		b = strconv.AppendFloat(b, float64(scores[i]), 'g', -1, 32)
		b = append(b, '\n')
	}
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	return atomicfile.WriteFile(path, b, 0o644)
}

// Score runs the passive party's side of a scoring session: it loads the
// bottom model and the rows of so.Split of its data file, aligns IDs with
// the active party by PSI, sends the embeddings of the rows the active
// holds and writes the scores to so.Out if the active shares them.
func Score(ctx context.Context, cfg Config, so ScoreOptions, opt Options) (*ScoreResult, error) {
	cfg.Resolve()
	if err := cfg.validate("passive score"); err != nil {
		return nil, err
	}
	log := opt.logger().With("party", "passive", "mode", "score")
	pd, err := loadForScoring(&cfg, cfg.Out, log.Warn)
	if err != nil {
		return nil, fmt.Errorf("passive score: %w", err)
	}
	var sel []rowRef
	var ids []uint64
	add := func(d *data.Dataset, test bool) {
		for i, id := range d.IDs {
			sel = append(sel, rowRef{test: test, row: i})
			ids = append(ids, id)
		}
	}
	switch so.Split {
	case "", "test":
		add(pd.split.Test, true)
	case "train":
		add(pd.split.Train, false)
	case "all":
		add(pd.split.Train, false)
		add(pd.split.Test, true)
	default:
		return nil, fmt.Errorf("passive score: --split %q: want test, train or all", so.Split)
	}
	if len(ids) == 0 {
		return nil, fmt.Errorf("passive score: no rows in the %s split of %s", so.Split, cfg.Data)
	}
	byID := make(map[uint64]rowRef, len(ids))
	for i, id := range ids {
		byID[id] = sel[i]
	}
	bottom, err := newBottom(&cfg, pd.split.Train.X)
	if err != nil {
		return nil, fmt.Errorf("passive score: %w", err)
	}
	if so.Model == "" {
		so.Model = filepath.Join(cfg.Out, rundir.BottomModelFile)
	}
	if err := readModel(so.Model, func(r *bufio.Reader) error { return bottom.Load(r) }); err != nil {
		return nil, fmt.Errorf("passive score: %w", err)
	}
	client, err := dial(&cfg, opt, "passive score")
	if err != nil {
		return nil, err
	}
	defer client.Close()
	res, err := scoreSession(ctx, client, &cfg, so, pd, ids, byID, bottom, log)
	if err != nil {
		abortSession(client, err)
		return nil, err
	}
	if err := client.Shutdown(ctx, ""); err != nil {
		return nil, fmt.Errorf("passive score: %w", err)
	}
	res.Stats = client.Stats()
	return res, nil
}

// scoreSession runs one scoring session over an open client.
func scoreSession(ctx context.Context, client *grpcnet.Client, cfg *Config, so ScoreOptions, pd *partyData,
	ids []uint64, byID map[uint64]rowRef, bottom model.Bottom, log *slog.Logger) (*ScoreResult, error) {
	if _, err := client.Hello(ctx, grpcnet.Hello{Party: partyName(cfg.Name, "passive"), Config: cfg.fingerprint()}); err != nil {
		return nil, fmt.Errorf("passive score: %w", err)
	}
	common, err := psi.RunUint64(ids, nil, func(r *psi.Request) (*psi.Response, error) { return client.PSI(ctx, r) })
	if err != nil {
		return nil, fmt.Errorf("passive score: private ID alignment: %w", err)
	}
	res := &ScoreResult{Rows: len(ids), Scored: len(common), Unscored: len(ids) - len(common)}
	log.Info("IDs aligned", "rows", len(ids), "held_by_active", len(common), "not_held", res.Unscored)
	if so.Unscored != "" {
		var missing []byte
		sorted := slices.Sorted(slices.Values(ids))
		for _, id := range sorted {
			if _, ok := slices.BinarySearch(common, id); !ok {
				missing = strconv.AppendUint(missing, id, 10)
				missing = append(missing, '\n')
			}
		}
		if err := atomicfile.WriteFile(so.Unscored, missing, 0o644); err != nil {
			return nil, fmt.Errorf("passive score: %w", err)
		}
	}
	if len(common) == 0 {
		return nil, errors.New("passive score: the active party holds none of the rows to score")
	}
	n := cfg.EvalBatch
	if n <= 0 {
		n = 8192
	}
	var scores []float32
	var batch data.Batch
	rows := make([]rowRef, 0, n)
	for b, start := 0, 0; start < len(common); b, start = b+1, start+n {
		end := min(start+n, len(common))
		rows = rows[:0]
		for _, id := range common[start:end] {
			rows = append(rows, byID[id])
		}
		gatherRows(pd.split, rows, &batch)
		e, err := bottom.Forward(&batch)
		if err != nil {
			return nil, fmt.Errorf("passive score: batch %d: %w", b, err)
		}
		if err := tensor.CheckFinite(fmt.Sprintf("passive score: batch %d: embedding", b), e); err != nil {
			return nil, err
		}
		r, err := client.Score(ctx, &grpcnet.ScoreBatch{Batch: b, Last: end == len(common), IDs: common[start:end], Embedding: e})
		if err != nil {
			return nil, fmt.Errorf("passive score: %w", err)
		}
		shared := r.Scores != nil
		if b == 0 {
			res.Shared = shared
		} else if shared != res.Shared {
			return nil, fmt.Errorf("passive score: batch %d: the active party shared scores for some batches only", b)
		}
		scores = append(scores, r.Scores...)
	}
	if res.Shared && so.Out != "" {
		if err := writeScores(so.Out, common, scores); err != nil {
			return nil, fmt.Errorf("passive score: %w", err)
		}
	}
	return res, nil
}

func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}
