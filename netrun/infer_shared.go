package netrun

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"

	"github.com/splitguard/splitguard/atomicfile"
	"github.com/splitguard/splitguard/data"
	"github.com/splitguard/splitguard/internal/buf"
	"github.com/splitguard/splitguard/rundir"
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
	return rundir.ReadModel(path, func(r io.Reader) error { return load(bufio.NewReader(r)) }) // the reader is already buffered
}

type rowRef struct {
	test bool
	row  int
}

// gatherRows copies the features of rows (of either split) into b.
func gatherRows(split *data.Split, rows []rowRef, b *data.Batch) {
	x := split.Train.X
	nc, nd := x.NumCat, x.NumDense
	b.Rows = len(rows)
	b.Cat = buf.Grow(b.Cat, len(rows)*nc)
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
		if err := os.MkdirAll(dir, rundir.DirMode); err != nil {
			return err
		}
	}
	return atomicfile.WriteFile(path, b, rundir.FileMode)
}
