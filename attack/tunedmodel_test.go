package attack

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/splitguard/splitguard/metrics"
	"github.com/splitguard/splitguard/tensor"
)

// angleModel is a toy tunable model attack: it scores a two-column target
// row by its projection at angle θ, ignoring the known rows.
type angleModel struct{ angleAttack }

func (*angleModel) Needs() Needs { return Needs{Input: Embedding, Model: true} }
func (a *angleModel) Complete(in *CompletionInput, dst []float64) ([]float64, error) {
	dst = slices.Grow(dst[:0], in.Target.Rows)[:in.Target.Rows]
	c, s := math.Cos(a.theta), math.Sin(a.theta)
	for i := range in.Target.Rows {
		r := in.Target.Row(i)
		dst[i] = c*float64(r[0]) + s*float64(r[1])
	}
	return dst, nil
}

// TestTunedModelAgainstIndependentFolds: the tuned model attacker chooses
// the candidate that an independent two-fold cross-validation (folds by
// rank within each class, AUC by metrics.AUC) chooses, reports 1 − p when
// it orients by −1, and reads no target label (it is given none).
func TestTunedModelAgainstIndependentFolds(t *testing.T) {
	for _, phi := range []float64{0.4, 2.5, -1.2} {
		r := rand.New(rand.NewPCG(uint64(100*phi+500), 1))
		known := tensor.New(60, 2)
		labels := make([]uint8, 60)
		for i := range 60 {
			labels[i] = uint8(i % 2)
			for j, m := range []float64{math.Cos(phi), math.Sin(phi)} {
				known.Row(i)[j] = float32(r.NormFloat64() + 1.2*m*float64(labels[i]))
			}
		}
		target := tensor.New(50, 2)
		for i := range target.Data {
			target.Data[i] = float32(r.NormFloat64())
		}
		tm, err := NewTunedModelFrom("angle", func() (ModelAttack, error) { return &angleModel{}, nil }, 10, 3)
		if err != nil {
			t.Fatal(err)
		}
		in := &CompletionInput{Known: known, Labels: labels, Target: target}
		got, err := tm.Complete(in, nil)
		if err != nil {
			t.Fatal(err)
		}
		// Independent: fold f = rows of rank ≡ f (mod 2) within their class.
		var folds [2][]int
		var rank [2]int
		for i, y := range labels {
			folds[rank[y]%2] = append(folds[rank[y]%2], i)
			rank[y]++
		}
		best, gap, sign := -1, -1.0, 0.0
		for c, v := range tm.Candidates() {
			var mean float64
			for _, rows := range folds {
				sc := make([]float64, len(rows))
				lab := make([]uint8, len(rows))
				for k, i := range rows {
					row := known.Row(i)
					sc[k] = math.Cos(v["theta"])*float64(row[0]) + math.Sin(v["theta"])*float64(row[1])
					lab[k] = labels[i]
				}
				auc, _ := metrics.AUC(sc, lab, nil)
				mean += auc / 2
			}
			if math.Abs(mean-0.5) > gap {
				best, gap, sign = c, math.Abs(mean-0.5), math.Copysign(1, mean-0.5)
			}
		}
		ch := tm.Choice()
		if ch.Candidate != best || ch.Values[SignKey] != sign || ch.Folds != 2 {
			t.Fatalf("φ %v: chose %d sign %v over %d folds; independently %d sign %v", phi, ch.Candidate, ch.Values[SignKey], ch.Folds, best, sign)
		}
		plain := &angleModel{}
		plain.theta = tm.Candidates()[best]["theta"]
		want, _ := plain.Complete(in, nil)
		for i := range want {
			if sign < 0 {
				want[i] = 1 - want[i]
			}
			if got[i] != want[i] {
				t.Fatalf("φ %v row %d: %v, want %v", phi, i, got[i], want[i])
			}
		}
	}
}

// TestTunedCompletionDefaults: with a budget of one candidate the tuned
// completion attacker is the default attack (its probabilities unchanged
// on separable data, where the orientation is +1), and every candidate's
// declared setting is accepted by both completion attacks.
func TestTunedCompletionDefaults(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	mk := func(n int) (*tensor.Matrix, []uint8) {
		x := tensor.New(n, 4)
		y := make([]uint8, n)
		for i := range n {
			y[i] = uint8(i % 2)
			for j := range 4 {
				x.Row(i)[j] = float32(r.NormFloat64())
			}
			x.Row(i)[0] += 2 * float32(y[i])
		}
		return x, y
	}
	known, labels := mk(30)
	unl, _ := mk(100)
	target, _ := mk(40)
	in := &CompletionInput{Known: known, Labels: labels, Unlabelled: unl, Target: target, Seed: 4}
	for _, name := range []string{"completion", "completion_supervised"} {
		tm, err := NewTunedModel(name, 1, 1)
		if err != nil {
			t.Fatal(err)
		}
		got, err := tm.Complete(in, nil)
		if err != nil {
			t.Fatal(err)
		}
		plain, _ := NewModel(name)
		want, _ := plain.Complete(in, nil)
		if !slices.Equal(got, want) || tm.Choice().Values[SignKey] != 1 {
			t.Errorf("%s: budget 1 differs from the default attack (choice %v)", name, tm.Choice().Values)
		}
		for _, v := range Candidates(name, tm.Params(), 30, 2) {
			c, _ := NewModel(name)
			if err := c.(Tunable).SetParams(v); err != nil {
				t.Errorf("%s: candidate %v refused: %v", name, v, err)
			}
		}
	}
}
