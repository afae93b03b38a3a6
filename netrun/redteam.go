package netrun

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"

	"github.com/splitguard/splitguard/attack"
	"github.com/splitguard/splitguard/audit"
	"github.com/splitguard/splitguard/config"
	"github.com/splitguard/splitguard/metrics"
	"github.com/splitguard/splitguard/party/passive"
	"github.com/splitguard/splitguard/rundir"
)

// redTeam runs the label-free attacks on what the passive party actually
// receives and computes, and logs per batch, for every attack and layer,
// quantiles of the scores and how a 1-D 2-means split of the scores
// divides the batch (the share of rows in the high-score cluster is the
// share the attack flags as positive). No label is involved.
type redTeam struct {
	path     string
	f        *os.File
	attacks  []attack.Attack
	minority bool
	scores   []float64
	scored   []bool
}

// RedTeamScore is one attack's label-free summary of one batch at one
// layer.
type RedTeamScore struct {
	Q05 float64 `json:"q05"`
	Q50 float64 `json:"q50"`
	Q95 float64 `json:"q95"`
	// Flagged is the share of the batch in the high-score cluster.
	Flagged float64 `json:"flagged"`
	// Clusters are the sizes of the low- and high-score clusters.
	Clusters [2]int `json:"clusters"`
}

// RedTeamRecord is one line of redteam.jsonl.
type RedTeamRecord struct {
	Step   int64                   `json:"step"`
	Epoch  int                     `json:"epoch"`
	Size   int                     `json:"size"`
	Scores map[string]RedTeamScore `json:"scores"`
}

func newRedTeam(path string, names []string, minority bool) (*redTeam, error) {
	r := &redTeam{path: path, minority: minority}
	// "all" expands as in train (config.ExpandAttacks: the expensive
	// attacks only when named), then the label-free ones stay.
	for _, n := range config.ExpandAttacks(names) {
		p, err := attack.NewPlugin(n)
		if err != nil {
			return nil, err
		}
		// A passive party alone runs the per-batch attacks that need no
		// label: no oracle, no hints.
		if a, ok := p.(attack.Attack); ok && p.Needs().LabelFree() {
			r.attacks = append(r.attacks, a)
		}
	}
	if len(r.attacks) == 0 {
		return nil, fmt.Errorf("passive: the red team needs at least one label-free attack (%s)", strings.Join(LabelFreeAttacks(), ", "))
	}
	return r, r.rewind(math.MaxInt64) // the resume step decides what stays
}

// LabelFreeAttacks lists the registered per-batch attacks a party without
// labels can run on its own (the red team's choice).
func LabelFreeAttacks() []string {
	var out []string
	for _, n := range attack.Names() {
		if p, err := attack.NewPlugin(n); err == nil {
			if _, ok := p.(attack.Attack); ok && p.Needs().LabelFree() {
				out = append(out, n)
			}
		}
	}
	return out
}

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
	return err
}

func (r *redTeam) close() {
	if r.f != nil {
		r.f.Close()
		r.f = nil
	}
}

func (r *redTeam) observe(ob *passive.Observation) error {
	layers := audit.LayerNames(len(ob.Grads))
	n := len(ob.IDs)
	rec := RedTeamRecord{Step: ob.Step, Epoch: ob.Epoch, Size: n, Scores: map[string]RedTeamScore{}}
	r.scores = slices.Grow(r.scores[:0], n)[:n]
	r.scored = slices.Grow(r.scored[:0], n)[:n]
	for l, layer := range layers {
		for _, a := range r.attacks {
			x := ob.Grads[l]
			if a.Needs().Input == attack.Embedding {
				x = ob.Outputs[l]
			}
			for i := range r.scored {
				r.scored[i] = true
			}
			obs := &attack.Observation{Layer: layer, X: x, PositivesMinority: r.minority}
			if a.Needs().WithOutput {
				obs.Output = ob.Outputs[l] // e.g. grad_match's surrogate top
			}
			if err := a.Score(obs, r.scores, r.scored); err != nil {
				return fmt.Errorf("passive: red team: step %d: %s at %s: %w", ob.Step, a.Name(), layer, err)
			}
			var s []float64
			for i, ok := range r.scored {
				if ok {
					s = append(s, r.scores[i])
				}
			}
			rec.Scores[metrics.Key(a.Name(), layer)] = summariseScores(s)
		}
	}
	return rundir.AppendLine(r.f, rec)
}

// summariseScores returns the quantiles of s and its 1-D 2-means split
// (the split of the sorted scores minimising the within-cluster sum of
// squares).
func summariseScores(s []float64) RedTeamScore {
	var out RedTeamScore
	if len(s) == 0 {
		return out
	}
	slices.Sort(s)
	out.Q05, _ = metrics.QuantileSorted(s, 0.05)
	out.Q50, _ = metrics.QuantileSorted(s, 0.5)
	out.Q95, _ = metrics.QuantileSorted(s, 0.95)
	n := len(s)
	prefix := make([]float64, n+1)
	prefix2 := make([]float64, n+1)
	for i, v := range s {
		prefix[i+1] = prefix[i] + v
		prefix2[i+1] = prefix2[i] + v*v
	}
	sse := func(a, b int) float64 { // over s[a:b]
		m := float64(b - a)
		sum := prefix[b] - prefix[a]
		return prefix2[b] - prefix2[a] - sum*sum/m
	}
	best, cut := -1.0, n
	for k := 1; k < n; k++ {
		if s[k] == s[k-1] {
			continue
		}
		if v := sse(0, k) + sse(k, n); best < 0 || v < best {
			best, cut = v, k
		}
	}
	out.Clusters = [2]int{cut, n - cut}
	out.Flagged = float64(n-cut) / float64(n)
	return out
}
