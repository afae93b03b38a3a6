package netrun

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"log/slog"

	"github.com/splitguard/splitguard/atomicfile"
	"github.com/splitguard/splitguard/data"
	"github.com/splitguard/splitguard/model"
	"github.com/splitguard/splitguard/psi"
	"github.com/splitguard/splitguard/rundir"
	"github.com/splitguard/splitguard/tensor"
	"github.com/splitguard/splitguard/transport"
	"github.com/splitguard/splitguard/transport/grpcnet"
)

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
	// ConnectTimeout bounds how long scoring waits for an active party
	// that does not answer at all (a closed port); 0 means
	// DefaultScoreConnectTimeout.
	ConnectTimeout time.Duration
}

// DefaultScoreConnectTimeout is how long scoring waits, by default, for an
// active party that does not answer: a serving active party is up before
// anyone scores against it.
const DefaultScoreConnectTimeout = 30 * time.Second

// ScoreResult reports a passive scoring session.
type ScoreResult struct {
	Rows     int  // rows selected for scoring
	Scored   int  // rows scored (the PSI intersection)
	Unscored int  // rows the active party does not hold
	Shared   bool // the active party returned the scores (written to Out)
	Stats    grpcnet.Stats
}

// Score runs the passive party's side of a scoring session: it loads the
// bottom model and the rows of so.Split of its data file, aligns IDs with
// the active party by PSI, sends the embeddings of the rows the active
// holds and writes the scores to so.Out if the active shares them.
func Score(ctx context.Context, cfg Config, so ScoreOptions, opt Options) (*ScoreResult, error) {
	cfg.Resolve()
	if err := cfg.prepare("passive score", opt); err != nil {
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
		return nil, fmt.Errorf("passive score: the split to score %q: want test, train or all", so.Split)
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
	connect := so.ConnectTimeout
	if connect <= 0 {
		connect = DefaultScoreConnectTimeout
	}
	client, err := dial(&cfg, opt, "passive score", connect)
	if err != nil {
		return nil, err
	}
	defer client.Close()
	res, err := scoreSession(ctx, client, &cfg, so, pd, ids, byID, bottom, log)
	if err != nil {
		abortSession(client, err)
		return nil, err
	}
	// The end waits for a link down for a moment, not for a peer that is
	// gone: as long as a training run's end (endShutdownTimeout).
	sctx, cancel := context.WithTimeout(ctx, endShutdownTimeout)
	err = client.Shutdown(sctx, "")
	cancel()
	if err != nil {
		return nil, fmt.Errorf("passive score: %w", err)
	}
	res.Stats = client.Stats()
	return res, nil
}

// scoreSession runs one scoring session over an open client.
func scoreSession(ctx context.Context, client *grpcnet.Client, cfg *Config, so ScoreOptions, pd *partyData,
	ids []uint64, byID map[uint64]rowRef, bottom model.Bottom, log *slog.Logger) (*ScoreResult, error) {
	if _, err := client.Hello(ctx, transport.Hello{Party: partyName(cfg.Name, "passive"), Config: cfg.fingerprint()}); err != nil {
		return nil, fmt.Errorf("passive score: %w", err)
	}
	common, err := alignIDs(ids, func(r *psi.Request) (*psi.Response, error) { return client.PSI(ctx, r) })
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
		r, err := client.Score(ctx, &transport.ScoreBatch{Batch: b, Last: end == len(common), IDs: common[start:end], Embedding: e})
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
