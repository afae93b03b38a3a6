package run

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/splitguard/splitguard/data"
	"github.com/splitguard/splitguard/nn"
	"github.com/splitguard/splitguard/rundir"
)

// ValScores are a trained model's scores of its run's validation rows.
type ValScores struct {
	// IDs are the validation rows' IDs in canonical order, Labels their
	// labels and Scores the model's probability of the positive class.
	IDs    []uint64
	Labels []uint8
	Scores []float64
	// TestRows is the number of rows of the run's test split (a count the
	// configuration's split decides; no test row's features or label is
	// read into the scores).
	TestRows int
}

// valSlice is the most validation rows scored at once (party/active
// scores in slices of the same size; a row's score reads that row only).
const valSlice = 2048

// ValidationScores scores the validation rows of the in-process run in
// dir with its saved models (bottom.model and top.model: the model
// selection kept), as the run's evaluation scored them: the passive's
// bottom on its columns, the embedding rounded to the wire encoding, the
// top on it and the active party's own columns, the sigmoid. Their AUC
// is the run's summary.json val_auc_selected. A run with several passive
// parties is refused.
func ValidationScores(dir string) (*ValScores, error) {
	cfg, err := rundir.LoadRunConfig(dir)
	if err != nil {
		return nil, err
	}
	if cfg.MultiParty() {
		return nil, fmt.Errorf("run %s has several passive parties: its validation scores are not reloaded", dir)
	}
	split, err := cfg.LoadData()
	if err != nil {
		return nil, err
	}
	split.SortByID()
	testRows := 0
	if split.Test != nil {
		testRows = len(split.Test.IDs)
	}
	split.Test = nil // the validation rows only
	train, val := data.SplitValidation(split.Train, cfg.Seed, cfg.ValFrac)
	if val == nil || len(val.IDs) == 0 {
		return nil, fmt.Errorf("run %s has no validation rows (val_frac %g)", dir, cfg.ValFrac)
	}
	pv, av, err := partyViews(cfg, split, train, val)
	if err != nil {
		return nil, err
	}
	bottom, top, wide, err := cfg.BuildSplitModels(pv.train.X, av.train.X)
	if err != nil {
		return nil, err
	}
	if err := rundir.ReadModel(filepath.Join(dir, rundir.BottomModelFile), bottom.Load); err != nil {
		return nil, err
	}
	if err := rundir.ReadModel(filepath.Join(dir, rundir.TopModelFile), top.Load); err != nil {
		return nil, err
	}
	enc, err := cfg.Wire()
	if err != nil {
		return nil, err
	}
	n := len(val.IDs)
	out := &ValScores{IDs: val.IDs, Labels: val.Labels, Scores: make([]float64, n), TestRows: testRows}
	var pb, ab data.Batch
	rows := make([]int, 0, valSlice)
	probs := make([]float32, valSlice)
	for s := 0; s < n; s += valSlice {
		t := min(s+valSlice, n)
		rows = rowChunk(rows, s, n, valSlice)
		pv.val.X.Gather(rows, &pb)
		emb, err := bottom.Forward(&pb)
		if err != nil {
			return nil, fmt.Errorf("run %s: validation rows: %w", dir, err)
		}
		if err := enc.Embedding.Round(emb); err != nil {
			return nil, err
		}
		logits, err := top.Forward(emb, wideBatch(wide, av.val.X, rows, &ab))
		if err != nil {
			return nil, fmt.Errorf("run %s: validation rows: %w", dir, err)
		}
		if len(logits) != t-s {
			return nil, errors.New("the top gave another number of logits than rows")
		}
		nn.Sigmoid(probs[:t-s], logits)
		for i, p := range probs[:t-s] {
			out.Scores[s+i] = float64(p)
		}
	}
	return out, nil
}
