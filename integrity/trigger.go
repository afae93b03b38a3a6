package integrity

import (
	"github.com/splitguard/splitguard/data"
)

// featureTrigger is gradient replacement's trigger in the passive party's
// features (integrity.md §8, §11d). With categorical columns it is a
// pattern of rare but valid ids: the last ⌈k/2⌉ of the party's k
// categorical columns each set to the id its training rows hold least
// often (at least once; ties to the smallest id) — values the bottom has
// an embedding for, which hardly any clean row carries, and which carry
// no label signal of their own. (The out-of-vocabulary id 0 is none of
// these: every test row whose value was not seen in training holds it, so
// a trigger on it spills onto clean rows.) Without categorical columns,
// or with a stripe value given, it is (also) the stripe v, 0, v, 0, … on
// the last ⌈n/2⌉ of the n dense columns (scaled to [0, 1] by the
// training range: each column's observed maximum and minimum for v = 1,
// the default).
type featureTrigger struct {
	stripe  bool
	v       float32
	rareIDs []int32 // ids of the last len(rareIDs) categorical columns
}

// newFeatureTrigger builds the trigger from the party's training
// features; v is the stripe's value (0: none with categorical columns,
// else grTrigger).
func newFeatureTrigger(train *data.Features, v float32) featureTrigger {
	t := featureTrigger{stripe: v != 0 || train.NumCat == 0, v: v}
	if v == 0 {
		t.v = grTrigger
	}
	k := train.NumCat
	for j := k / 2; j < k; j++ {
		t.rareIDs = append(t.rareIDs, rarestID(train, j))
	}
	return t
}

// rarestID is the id that column j of f holds in the fewest rows (at
// least one), ties to the smallest.
func rarestID(f *data.Features, j int) int32 {
	counts := map[int32]int{}
	for r := range f.Rows {
		counts[f.Cat[r*f.NumCat+j]]++
	}
	best, bestN := int32(-1), 0
	for id, n := range counts {
		if best < 0 || n < bestN || (n == bestN && id < best) {
			best, bestN = id, n
		}
	}
	return best
}

// apply writes the trigger into row r of b.
func (t *featureTrigger) apply(b *data.Batch, r int) {
	if t.stripe {
		stripeRow(b, r, t.v)
	}
	if len(t.rareIDs) == 0 {
		return
	}
	k := len(b.Cat) / b.Rows
	copy(b.Cat[(r+1)*k-len(t.rareIDs):(r+1)*k], t.rareIDs)
}

// stripeRow writes the dense stripe v, 0, v, 0, … (the first v) into the
// last ⌈n/2⌉ of row r's n dense columns.
func stripeRow(b *data.Batch, r int, v float32) {
	if b.Dense == nil || b.Dense.Cols == 0 {
		return
	}
	n := b.Dense.Cols
	row := b.Dense.Data[r*n : (r+1)*n]
	for i := n / 2; i < n; i++ {
		row[i] = 0
		if (i-n/2)%2 == 0 {
			row[i] = v
		}
	}
}
