package model

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/splitguard/splitguard/data"
	"github.com/splitguard/splitguard/tensor"
)

// wideTable is 3 rows of one categorical and two dense columns: the
// first dense column 0, 0.5, 1 (mean 0.5, population sd √(1/6)), the
// second constant 0.3.
func wideTable() *data.Features {
	return &data.Features{Rows: 3, NumCat: 1, Cat: []int32{0, 1, 0}, Cardinality: []int{2}, CatNames: []string{"c"},
		NumDense: 2, Dense: []float32{0, 0.3, 0.5, 0.3, 1, 0.3}, DenseNames: []string{"a", "b"}}
}

func wdlTop(t *testing.T, standardise bool, x *data.Features) *DeepTop {
	t.Helper()
	k, _ := LookupKind("wdl")
	cfg := Config{Widths: []int{4, 4}, Cut: 1, Seed: 7, WideStandardise: standardise}
	top, err := k.NewTop(Settings{Table: cfg}, x)
	if err != nil {
		t.Fatal(err)
	}
	return top.(*DeepTop)
}

// TestWideScaleByHand checks the standardisation's statistics and its
// output on hand-computed values.
func TestWideScaleByHand(t *testing.T) {
	s := newWideScale(wideTable())
	inv := 1 / math.Sqrt(1.0/6) // 2.4494897…
	want := []float32{0.5, 0.3, float32(inv), 0}
	for i, w := range want {
		if math.Abs(float64(s.meanInv[i]-w)) > 1e-6 {
			t.Fatalf("statistics %v, want %v (means, then 1/sd; 0 for the constant column)", s.meanInv, want)
		}
	}
	x := tensor.New(2, 2)
	copy(x.Data, []float32{1, 0.9, 0.25, 0.3})
	z := s.apply(x)
	wantZ := []float64{0.5 * inv, 0, -0.25 * inv, 0}
	for i, w := range wantZ {
		if math.Abs(float64(z.Data[i])-w) > 1e-5 {
			t.Fatalf("standardised %v, want %v", z.Data, wantZ)
		}
	}
	if id := newWideScale(&data.Features{NumDense: 2}); id.meanInv[0] != 0 || id.meanInv[2] != 1 || id.meanInv[3] != 1 {
		t.Errorf("without rows: %v, want the identity (means 0, 1/sd 1)", id.meanInv)
	}
}

// TestWideStandardiseLogit checks that the standardised top's logit
// differs from the min–max one of the same seed by exactly the wide
// weights times the change of input, Σ_k w_k (z_k − x_k), and that the
// deep part and the categorical wide part are untouched.
func TestWideStandardiseLogit(t *testing.T) {
	x := wideTable()
	plain, std := wdlTop(t, false, x), wdlTop(t, true, x)
	if plain.wideScale != nil || std.wideScale == nil {
		t.Fatal("WideStandardise does not switch the standardisation")
	}
	e := tensor.New(3, 4)
	for i := range e.Data {
		e.Data[i] = float32(i%5) * 0.1
	}
	var b data.Batch
	x.Gather([]int{0, 1, 2}, &b)
	lp, err := plain.Forward(e, &b)
	if err != nil {
		t.Fatal(err)
	}
	lp = append([]float32(nil), lp...)
	ls, err := std.Forward(e, &b)
	if err != nil {
		t.Fatal(err)
	}
	w := plain.wideLin.W.Data // the same seed: the same weights
	inv := 1 / math.Sqrt(1.0/6)
	for i := range 3 {
		xa := float64(x.Dense[2*i])
		za := (xa - 0.5) * inv
		// The constant column's z is 0, its x 0.3.
		want := float64(lp[i]) + float64(w[0])*(za-xa) + float64(w[1])*(0-0.3)
		if math.Abs(float64(ls[i])-want) > 1e-5 {
			t.Errorf("row %d: logit %v, want %v", i, ls[i], want)
		}
	}
}

// TestWideStandardiseCheckpoint checks that a standardised top's
// checkpoint carries its statistics: loaded into a top built over other
// rows it scores as the original, and it does not load into a min–max
// top (the section count differs).
func TestWideStandardiseCheckpoint(t *testing.T) {
	x := wideTable()
	orig := wdlTop(t, true, x)
	var buf bytes.Buffer
	if err := orig.Save(&buf); err != nil {
		t.Fatal(err)
	}
	other := &data.Features{Rows: 1, NumCat: 1, Cat: []int32{1}, Cardinality: []int{2}, NumDense: 2, Dense: []float32{0.9, 0.1}}
	loaded := wdlTop(t, true, other)
	if err := loaded.Load(bytes.NewReader(buf.Bytes())); err != nil {
		t.Fatal(err)
	}
	e := tensor.New(3, 4)
	var b data.Batch
	x.Gather([]int{0, 1, 2}, &b)
	a, _ := orig.Forward(e, &b)
	a = append([]float32(nil), a...)
	c, _ := loaded.Forward(e, &b)
	for i := range a {
		if a[i] != c[i] {
			t.Fatalf("loaded top scores %v, the saved one %v", c, a)
		}
	}
	if err := wdlTop(t, false, x).Load(bytes.NewReader(buf.Bytes())); err == nil || !strings.Contains(err.Error(), "sections") {
		t.Errorf("a standardised checkpoint loaded into a min–max top: %v", err)
	}
}
