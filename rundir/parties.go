package rundir

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/splitguard/splitguard/audit"
	"github.com/splitguard/splitguard/metrics"
	"github.com/splitguard/splitguard/party/active"
)

// PartyAudit is one audited view of a run with several passive parties:
// one passive party's (Members of one name) or a colluding subset's (the
// union of what its members received). Its name labels its records.
type PartyAudit struct {
	Name    string
	Members []string
	Auditor *audit.Auditor
}

// PartySummary is one party's or colluding subset's part of summary.json.
type PartySummary struct {
	// Members are the passive parties whose received gradients (and
	// embeddings) the figures pool: one name for a single party.
	Members []string                       `json:"members"`
	Leak    map[string]metrics.LeakSummary `json:"leak"`
	// ValAUCWithout is the validation AUC at the selected evaluation
	// with this party's embedding replaced by its means
	// (leave-one-party-out, key contribution), and GainSelected and
	// GainFinal the validation AUC minus it at the selected and at the
	// last evaluation: what the joint model gains from the party. Absent
	// for colluding subsets and without key contribution.
	ValAUCWithout *float64 `json:"val_auc_without,omitempty"`
	GainSelected  *float64 `json:"gain_selected,omitempty"`
	GainFinal     *float64 `json:"gain_final,omitempty"`
	// EvalAttacksFinal and EvalAttacksBest are the model attacks'
	// figures on this party's bottom (a subset's: its members' bottoms
	// pooled) at the last evaluation and the largest of each over the
	// evaluations (EvalRecord.PartyAttacks).
	EvalAttacksFinal map[string]float64 `json:"eval_attacks_final,omitempty"`
	EvalAttacksBest  map[string]float64 `json:"eval_attacks_best,omitempty"`
}

// SetPartyAttacks gives the model attacks' figures per party and
// colluding subset for the next evaluation (EvalRecord.PartyAttacks).
func (r *Recorder) SetPartyAttacks(figs map[string]map[string]float64) { r.partyAttacks = figs }

// SetParties makes the recorder audit every step once more for each of
// views (Observation.Parties, in the same order) and record their figures
// labelled by name: in batches.jsonl (BatchRecord.Parties), eval.jsonl
// (the leave-one-party-out figures of the first views that are single
// parties, in the order of active.EvalResult.ValAUCWithoutParty) and
// summary.json (Summary.Parties).
func (r *Recorder) SetParties(views []PartyAudit) { r.parties = views }

// observeParties audits the step's per-party batches.
func (r *Recorder) observeParties(batches []*audit.Batch) (map[string]map[string]*float64, error) {
	if len(r.parties) == 0 {
		return nil, nil
	}
	if len(batches) != len(r.parties) {
		return nil, fmt.Errorf("audit: %d per-party batches for %d audited parties", len(batches), len(r.parties))
	}
	out := make(map[string]map[string]*float64, len(r.parties))
	for k, p := range r.parties {
		leak, err := p.Auditor.Observe(batches[k])
		if err != nil {
			return nil, fmt.Errorf("audit of %s: %w", p.Name, err)
		}
		out[p.Name] = maps.Clone(leak)
	}
	return out, nil
}

// evalParties fills the leave-one-party-out figures of e.
func (r *Recorder) evalParties(e *EvalRecord, res *active.EvalResult) {
	e.PartyAttacks, r.partyAttacks = r.partyAttacks, nil
	if len(res.ValAUCWithoutParty) == 0 {
		return
	}
	e.ValAUCWithoutParty = map[string]*float64{}
	e.PartyGain = map[string]*float64{}
	for k, auc := range res.ValAUCWithoutParty {
		name := r.parties[k].Name
		if math.IsNaN(auc) {
			e.ValAUCWithoutParty[name] = nil
			continue
		}
		a := auc
		e.ValAUCWithoutParty[name] = &a
		if e.ValAUC != nil {
			g := *e.ValAUC - auc
			e.PartyGain[name] = &g
		}
	}
}

// summaryParties fills summary.json's per-party figures.
func (r *Recorder) summaryParties(s *Summary, last EvalRecord) {
	if len(r.parties) == 0 {
		return
	}
	sel, hasSel := r.Selected()
	s.Parties = make(map[string]PartySummary, len(r.parties))
	for _, p := range r.parties {
		ps := PartySummary{Members: p.Members, Leak: p.Auditor.Summary()}
		if hasSel {
			ps.ValAUCWithout, ps.GainSelected = sel.ValAUCWithoutParty[p.Name], sel.PartyGain[p.Name]
		}
		ps.GainFinal = last.PartyGain[p.Name]
		ps.EvalAttacksFinal = maps.Clone(last.PartyAttacks[p.Name])
		for _, e := range r.evalsSeen {
			for k, v := range e.PartyAttacks[p.Name] {
				if ps.EvalAttacksBest == nil {
					ps.EvalAttacksBest = map[string]float64{}
				}
				if b, ok := ps.EvalAttacksBest[k]; !ok || v > b {
					ps.EvalAttacksBest[k] = v
				}
			}
		}
		s.Parties[p.Name] = ps
	}
}

// partyLog is the evaluation log line's per-party gains ("" without).
func partyLog(e EvalRecord) string {
	var b strings.Builder
	for _, name := range slices.Sorted(maps.Keys(e.PartyGain)) {
		fmt.Fprintf(&b, "  gain %s %.4f", name, *e.PartyGain[name])
	}
	return b.String()
}
