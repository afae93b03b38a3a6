package run

import (
	"github.com/splitguard/splitguard/config"
	"github.com/splitguard/splitguard/data"
	"github.com/splitguard/splitguard/integrity"
	"github.com/splitguard/splitguard/metrics"
	"github.com/splitguard/splitguard/model"
	"github.com/splitguard/splitguard/rundir"
	"github.com/splitguard/splitguard/tensor"
)

// rowPurifying is VFLIP at inference over the backdoor's test rows
// (detector vflip_rows): each row's score and flags, clean and
// triggered, and the top's logits on the purified rows. A nil
// *rowPurifying does nothing.
type rowPurifying struct {
	p       integrity.RowPurifier
	cheater int
	k       int // parties
	// score, flagged and logits for the clean [0] and triggered [1] rows
	score   [2][]float64
	flagged [2][]bool
	logits  [2][]float32
	work    tensor.Matrix
}

// newRowPurifying returns the purification of n test rows by p (nil: none),
// cheater the cheating party's index.
func newRowPurifying(p integrity.RowPurifier, n, cheater int) *rowPurifying {
	if p == nil {
		return nil
	}
	k := p.Parties()
	r := &rowPurifying{p: p, cheater: cheater, k: k}
	for t := range 2 {
		r.score[t], r.flagged[t], r.logits[t] = make([]float64, n), make([]bool, n*k), make([]float32, n)
	}
	return r
}

// chunk scores the combined embeddings joined of the test rows from s,
// purifies a copy and runs the top on it.
func (r *rowPurifying) chunk(joined *tensor.Matrix, w *data.Batch, top model.Top, s int, triggered bool) error {
	if r == nil {
		return nil
	}
	t := 0
	if triggered {
		t = 1
	}
	n := joined.Rows
	flags := r.flagged[t][s*r.k : (s+n)*r.k]
	r.p.ScoreRows(joined, r.score[t][s:s+n], flags)
	r.work.Resize(joined.Rows, joined.Cols)
	copy(r.work.Data, joined.Data[:n*joined.Cols])
	r.p.Purify(&r.work, flags)
	logits, err := top.Forward(&r.work, w)
	if err != nil {
		return err
	}
	copy(r.logits[t][s:], logits)
	return nil
}

// summary is the purification's outcome: the detection AUC of the row
// score (triggered rows against the same rows clean), the shares
// flagged, and the backdoor's measures on the purified rows.
func (r *rowPurifying) summary(cfg *config.Config, bd integrity.Backdoor, known []uint64, av *view) (*rundir.VflipRowsSummary, error) {
	if r == nil {
		return nil, nil
	}
	pur, err := backdoorSummary(cfg, bd, known, r.logits[0], r.logits[1], av)
	if err != nil {
		return nil, err
	}
	n := len(r.score[0])
	labels := make([]uint8, 2*n)
	for i := n; i < 2*n; i++ {
		labels[i] = 1
	}
	auc, _ := metrics.AUC(append(append(make([]float64, 0, 2*n), r.score[0]...), r.score[1]...), labels, nil)
	out := &rundir.VflipRowsSummary{Threshold: r.p.RowThreshold(), DetectionAUC: auc,
		FlaggedClean: r.anyShare(0), FlaggedTriggered: r.anyShare(1),
		ASR: pur.ASR, CleanRate: pur.CleanRate, CleanTestAUC: pur.CleanTestAUC}
	hit := 0
	for i := range n {
		if r.flagged[1][i*r.k+r.cheater] {
			hit++
		}
	}
	out.CheaterFlagged = float64(hit) / float64(max(n, 1))
	return out, nil
}

// anyShare is the share of rows (t: 0 clean, 1 triggered) with a block
// flagged.
func (r *rowPurifying) anyShare(t int) float64 {
	n := len(r.score[t])
	c := 0
	for i := range n {
		for p := range r.k {
			if r.flagged[t][i*r.k+p] {
				c++
				break
			}
		}
	}
	return float64(c) / float64(max(n, 1))
}
