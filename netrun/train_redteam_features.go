package netrun

import (
	"encoding/json"
	"fmt"
	"math"
	"os"

	"github.com/splitguard/splitguard/attack/feature"
	"github.com/splitguard/splitguard/data"
	"github.com/splitguard/splitguard/rundir"
)

// RedTeamFeaturesFile is the passive party's log of its own feature
// audit in its run directory.
const RedTeamFeaturesFile = "redteam_features.jsonl"

// RedTeamFeatureRecord is one line of redteam_features.jsonl: the feature
// attacks' figures at one evaluation (the keys of the in-process run's
// eval.jsonl features).
type RedTeamFeatureRecord struct {
	Step     int64              `json:"step"`
	Features map[string]float64 `json:"features"`
}

// featureTeam is the passive party's audit of its own features with the
// red team (key feature_attacks): at every evaluation the feature attacks
// reconstruct its test rows' columns from the embeddings its bottom gives
// them, fitted on an auxiliary set it draws from its training rows as the
// in-process run does. It reads no label and no active column, so the
// decoders read the embedding only; where the active party has no column
// its figures are the in-process run's.
type featureTeam struct {
	path  string
	f     *os.File
	names []string
	ev    *feature.Evaluator
}

func newFeatureTeam(path string, names []string) (*featureTeam, error) {
	t := &featureTeam{path: path, names: names}
	return t, t.rewind(math.MaxInt64)
}

// start draws the auxiliary rows of the aligned training rows (without
// the validation rows) and fixes the test rows, once.
func (t *featureTeam) start(cfg *Config, train, test *data.Dataset) error {
	if t.ev != nil {
		return nil
	}
	ev, err := feature.NewEvaluator(t.names, train.X, test.X, nil, nil, cfg.FeatureAuxRows(), cfg.Seed, cfg.EvalBatch)
	if err != nil {
		return fmt.Errorf("passive: red team: %w", err)
	}
	t.ev = ev
	return nil
}

// observe runs the attacks with enc, the bottom after the evaluation of
// step, and logs their figures.
func (t *featureTeam) observe(enc feature.Encoder, step int64) error {
	figs, err := t.ev.Run(enc)
	if err != nil {
		return fmt.Errorf("passive: red team: evaluation at step %d: %w", step, err)
	}
	return rundir.AppendLine(t.f, RedTeamFeatureRecord{Step: step, Features: figs})
}

// rewind keeps the records of evaluations at steps up to step and reopens
// the file.
func (t *featureTeam) rewind(step int64) error {
	t.close()
	f, err := rundir.KeepLines(t.path, func(line []byte) (bool, error) {
		var rec RedTeamFeatureRecord
		if err := json.Unmarshal(line, &rec); err != nil {
			return false, err
		}
		return rec.Step <= step, nil
	})
	t.f = f
	return err
}

func (t *featureTeam) close() {
	if t.f != nil {
		t.f.Close()
		t.f = nil
	}
}
