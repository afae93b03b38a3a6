package netrun

import (
	"encoding/json"
	"fmt"
	"math"
	"os"

	"github.com/splitguard/splitguard/audit"
	"github.com/splitguard/splitguard/party/passive"
	"github.com/splitguard/splitguard/rundir"
)

// redTeam is the passive party's red team: package audit's label-free
// mode (audit.LabelFree) on what the party actually receives and
// computes, logged per batch to redteam.jsonl: for every attack and layer,
// quantiles of the scores and how a 1-D 2-means split of the scores
// divides the batch (the share of rows in the high-score cluster is the
// share the attack flags as positive). The epoch attacks are summarised
// in the record of an epoch's last batch. No label is involved.
type redTeam struct {
	path     string
	f        *os.File
	aud      *audit.LabelFree
	perEpoch int // batches per epoch: the last one ends the epoch
	batch    audit.Batch
}

// RedTeamScore is one attack's label-free summary of one batch (or of an
// epoch's memory) at one layer.
type RedTeamScore = audit.ScoreSummary

// RedTeamRecord is one line of redteam.jsonl.
type RedTeamRecord struct {
	Step   int64                   `json:"step"`
	Epoch  int                     `json:"epoch"`
	Size   int                     `json:"size"`
	Scores map[string]RedTeamScore `json:"scores"`
	// EpochScores, in the record of an epoch's last batch, are the epoch
	// attacks' summaries over every example remembered since the party
	// (re)started: after a resume, since the resumed step.
	EpochScores map[string]RedTeamScore `json:"epoch_scores,omitempty"`
}

// newRedTeam returns the red team of the attack list names ("all" expands
// as in train, attack.Expand); the attacks that need labels are left out
// (redTeam.leftOut names them).
func newRedTeam(path string, names []string, minority bool) (*redTeam, error) {
	aud, err := audit.NewLabelFree(names, minority)
	if err != nil {
		return nil, fmt.Errorf("passive: red team: %w", err)
	}
	r := &redTeam{path: path, aud: aud}
	return r, r.rewind(math.MaxInt64) // the resume step decides what stays
}

// leftOut names the attacks of the list that need labels.
func (r *redTeam) leftOut() []string { return r.aud.LeftOut() }

// setBatchesPerEpoch tells the red team where an epoch ends.
func (r *redTeam) setBatchesPerEpoch(n int) { r.perEpoch = n }

// rewind keeps the records of steps before step and reopens the file.
func (r *redTeam) rewind(step int64) error {
	r.close()
	f, err := rundir.KeepLines(r.path, func(line []byte) (bool, error) {
		var rec RedTeamRecord
		if err := json.Unmarshal(line, &rec); err != nil {
			return false, err
		}
		return rec.Step < step, nil
	})
	r.f = f
	r.aud.Forget() // the epoch's earlier batches are not seen again
	return err
}

func (r *redTeam) close() {
	if r.f != nil {
		r.f.Close()
		r.f = nil
	}
}

func (r *redTeam) observe(ob *passive.Observation) error {
	r.batch = audit.Batch{Step: ob.Step, Epoch: ob.Epoch, IDs: ob.IDs, Layers: audit.LayerNames(len(ob.Grads)),
		Grads: ob.Grads, Outputs: ob.Outputs}
	rec := RedTeamRecord{Step: ob.Step, Epoch: ob.Epoch, Size: len(ob.IDs), Scores: map[string]RedTeamScore{}}
	if err := r.aud.Observe(&r.batch, rec.Scores); err != nil {
		return fmt.Errorf("passive: red team: %w", err)
	}
	if r.aud.HasEpochMemory() && ob.Batch == r.perEpoch-1 {
		rec.EpochScores = map[string]RedTeamScore{}
		if err := r.aud.EndEpoch(rec.EpochScores); err != nil {
			return fmt.Errorf("passive: red team: epoch %d: %w", ob.Epoch, err)
		}
	}
	return rundir.AppendLine(r.f, rec)
}
