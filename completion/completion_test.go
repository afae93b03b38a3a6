package completion

import (
	"errors"
	"io"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/splitguard/splitguard/data"
	"github.com/splitguard/splitguard/model"
	"github.com/splitguard/splitguard/tensor"
)

// identity is a bottom whose cut output is the batch's dense features.
type identity struct {
	d   int
	out tensor.Matrix
}

func (b *identity) Forward(in *data.Batch) (*tensor.Matrix, error) {
	b.out.Resize(in.Rows, b.d)
	copy(b.out.Data, in.Dense.Data)
	return &b.out, nil
}
func (b *identity) Outputs() []*tensor.Matrix                         { return []*tensor.Matrix{&b.out} }
func (b *identity) Backward(*tensor.Matrix) ([]*tensor.Matrix, error) { return nil, errors.New("no") }
func (b *identity) Backprop(*tensor.Matrix) ([]*tensor.Matrix, error) { return nil, errors.New("no") }
func (b *identity) Step() error                                       { return nil }
func (b *identity) CutDim() int                                       { return b.d }
func (b *identity) Save(io.Writer) error                              { return nil }
func (b *identity) Load(io.Reader) error                              { return nil }

// features draws n rows of d dense columns whose first column separates
// the classes with a margin.
func features(r *rand.Rand, n, d int, posRate float64) (*data.Features, []uint8) {
	x := &data.Features{Rows: n, NumDense: d, Dense: make([]float32, n*d)}
	y := make([]uint8, n)
	for i := range n {
		row := x.Dense[i*d : (i+1)*d]
		for j := range row {
			row[j] = float32(r.NormFloat64())
		}
		if r.Float64() < posRate {
			y[i], row[0] = 1, float32(2+r.Float64())
		} else {
			row[0] = float32(-2 - r.Float64())
		}
	}
	return x, y
}

func TestPick(t *testing.T) {
	labels := make([]uint8, 1000)
	for i := range 250 {
		labels[i*4] = 1
	}
	for _, n := range []int{2, 10, 41, 400} {
		rows, err := Pick(labels, n, 300, 9)
		if err != nil {
			t.Fatal(err)
		}
		pos := 0
		for k, i := range rows.Known {
			if labels[i] != rows.KnownLabels[k] {
				t.Fatalf("n=%d: known row %d labelled %d, truth %d", n, i, rows.KnownLabels[k], labels[i])
			}
			pos += int(labels[i])
		}
		if len(rows.Known) != n || pos != n/2 {
			t.Errorf("n=%d: %d known rows, %d positive; want %d and %d", n, len(rows.Known), pos, n, n/2)
		}
		if len(rows.Unlabelled) != 300 {
			t.Errorf("n=%d: %d unlabelled rows, want 300", n, len(rows.Unlabelled))
		}
		all := append(slices.Clone(rows.Known), rows.Unlabelled...)
		slices.Sort(all)
		if len(slices.Compact(all)) != n+300 {
			t.Errorf("n=%d: known and unlabelled rows overlap", n)
		}
		again, _ := Pick(labels, n, 300, 9)
		if !slices.Equal(again.Known, rows.Known) || !slices.Equal(again.Unlabelled, rows.Unlabelled) {
			t.Errorf("n=%d: not deterministic for a seed", n)
		}
	}
	for _, n := range []int{0, 1, 502} {
		if _, err := Pick(labels, n, 10, 1); err == nil {
			t.Errorf("n=%d: no error", n)
		}
	}
}

func TestFromLabels(t *testing.T) {
	ids := []uint64{10, 20, 30, 40, 50}
	rows, ignored, err := FromLabels(ids, map[uint64]uint8{20: 1, 40: 0, 99: 1}, 10, 1)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(rows.Known, []int{1, 3}) || !slices.Equal(rows.KnownLabels, []uint8{1, 0}) ||
		!slices.Equal(rows.Unlabelled, []int{0, 2, 4}) || ignored != 1 {
		t.Errorf("got %+v, %d ignored", rows, ignored)
	}
	if _, _, err := FromLabels(ids, map[uint64]uint8{20: 1, 40: 1}, 10, 1); err == nil {
		t.Error("one class: no error")
	}
}

// TestRunSeparable runs both completion attacks through a bottom whose
// cut output separates the classes: the AUC is 1.
func TestRunSeparable(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 3))
	train, trainY := features(r, 3000, 6, 0.25)
	test, testY := features(r, 1000, 6, 0.25)
	rows, err := Pick(trainY, 40, DefaultUnlabelled, 5)
	if err != nil {
		t.Fatal(err)
	}
	a, err := New([]string{"norm", "completion", "completion_supervised"}, rows, 512, 5)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(a.Names(), []string{"completion", "completion_supervised"}) {
		t.Fatalf("names %v", a.Names())
	}
	res, err := a.Run(&identity{d: 6}, train, test, testY)
	if err != nil {
		t.Fatal(err)
	}
	for name, got := range res {
		if got.AUC < 0.999 || got.Accuracy < 0.97 {
			t.Errorf("%s: %+v, want AUC ≈ 1", name, got)
		}
	}
	if len(Flatten(res, nil)) != 6 {
		t.Errorf("flattened %v", Flatten(res, nil))
	}
	if none, _ := New([]string{"norm"}, rows, 0, 1); none != nil {
		t.Error("an attacker without model attacks")
	}
}

// columns returns the columns [lo, hi) of x's dense features.
func columns(x *data.Features, lo, hi int) *data.Features {
	out := &data.Features{Rows: x.Rows, NumDense: hi - lo}
	for i := range x.Rows {
		out.Dense = append(out.Dense, x.Dense[i*x.NumDense+lo:i*x.NumDense+hi]...)
	}
	return out
}

// TestRunPooled: two colluding parties holding columns 0–1 and 2–5 of
// the features, each with an identity bottom, pool exactly the whole
// table: RunPooled gives Run's figures on one party holding every column,
// bit for bit; the second party alone, without the separating column 0,
// is near chance.
func TestRunPooled(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 4))
	train, trainY := features(r, 3000, 6, 0.25)
	test, testY := features(r, 1000, 6, 0.25)
	rows, err := Pick(trainY, 40, DefaultUnlabelled, 5)
	if err != nil {
		t.Fatal(err)
	}
	attacker := func() *Attacker {
		a, err := New([]string{"completion"}, rows, 512, 5)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	whole, err := attacker().Run(&identity{d: 6}, train, test, testY)
	if err != nil {
		t.Fatal(err)
	}
	pooled, err := attacker().RunPooled([]model.Bottom{&identity{d: 2}, &identity{d: 4}},
		[]*data.Features{columns(train, 0, 2), columns(train, 2, 6)}, []*data.Features{columns(test, 0, 2), columns(test, 2, 6)}, testY)
	if err != nil {
		t.Fatal(err)
	}
	if whole["completion"] != pooled["completion"] {
		t.Errorf("pooled %+v, one party with every column %+v", pooled["completion"], whole["completion"])
	}
	alone, err := attacker().RunPooled([]model.Bottom{&identity{d: 4}}, []*data.Features{columns(train, 2, 6)}, []*data.Features{columns(test, 2, 6)}, testY)
	if err != nil {
		t.Fatal(err)
	}
	if auc := alone["completion"].AUC; auc > 0.6 || auc < 0.4 {
		t.Errorf("the party without the separating column: AUC %.3f, want near ½", auc)
	}
	if _, err := attacker().RunPooled([]model.Bottom{&identity{d: 2}}, []*data.Features{train, train}, []*data.Features{test}, testY); err == nil {
		t.Error("mismatched bottoms and feature sets were accepted")
	}
}
