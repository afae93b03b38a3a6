package nn

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/splitguard/splitguard/tensor"
)

func TestDenseHandComputed(t *testing.T) {
	d := NewDense(2, 3, HeNormal, rand.New(rand.NewPCG(1, 1)))
	copy(d.W.Data, []float32{1, 2, 3, 4, 5, 6})
	copy(d.B.Data, []float32{0.5, -1, 0})
	x := tensor.FromSlice(2, 2, []float32{1, 0, -1, 2})
	// Row 0: [1,2,3]+b; row 1: -[1,2,3]+2[4,5,6] = [7,8,9], +b.
	want := []float32{1.5, 1, 3, 7.5, 7, 9}
	if y := d.Forward(x); !close(y.Data, want, 0) {
		t.Fatalf("Forward = %v, want %v", y.Data, want)
	}
	dy := tensor.FromSlice(2, 3, []float32{1, 0, -1, 2, 1, 0})
	dx := d.Backward(dy)
	// dx = dy·Wᵀ: row 0: [1-3, 4-6] = [-2,-2]; row 1: [2+2, 8+5] = [4, 13].
	if !close(dx.Data, []float32{-2, -2, 4, 13}, 0) {
		t.Errorf("dx = %v", dx.Data)
	}
	// dW = xᵀ·dy: [1·dy0 − 1·dy1; 0·dy0 + 2·dy1] = [[-1,-1,-1],[4,2,0]].
	if !close(d.dW.Data, []float32{-1, -1, -1, 4, 2, 0}, 0) {
		t.Errorf("dW = %v", d.dW.Data)
	}
	if !close(d.dB.Data, []float32{3, 1, -1}, 0) {
		t.Errorf("db = %v", d.dB.Data)
	}
}

func TestDenseInitStatistics(t *testing.T) {
	r := rand.New(rand.NewPCG(2, 1))
	he := NewDense(200, 300, HeNormal, r)
	var s2 float64
	for _, v := range he.W.Data {
		s2 += float64(v) * float64(v)
	}
	if got, want := s2/float64(len(he.W.Data)), 2.0/200; math.Abs(got-want) > 0.05*want {
		t.Errorf("He variance %v, want %v", got, want)
	}
	g := NewDense(100, 200, GlorotUniform, r)
	a := math.Sqrt(6.0 / 300)
	for _, v := range g.W.Data {
		if math.Abs(float64(v)) > a {
			t.Fatalf("Glorot weight %v outside ±%v", v, a)
		}
	}
}

func close(got, want []float32, tol float64) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		if math.Abs(float64(got[i]-want[i])) > tol {
			return false
		}
	}
	return true
}

func TestReLUValues(t *testing.T) {
	negZero := float32(math.Copysign(0, -1))
	nan := float32(math.NaN())
	x := tensor.FromSlice(1, 7, []float32{-2, negZero, 0, 1e-30, 3, float32(math.Inf(-1)), float32(math.Inf(1))})
	var r ReLU
	y := r.Forward(x)
	want := []float32{0, 0, 0, 1e-30, 3, 0, float32(math.Inf(1))}
	for i, v := range y.Data {
		if v != want[i] || math.Signbit(float64(v)) {
			t.Errorf("relu(%v) = %v, want +%v", x.Data[i], v, want[i])
		}
	}
	dy := tensor.FromSlice(1, 7, []float32{1, 2, 3, 4, 5, 6, nan})
	dx := r.Backward(dy)
	wantDx := []float32{0, 0, 0, 4, 5, 0}
	for i, w := range wantDx {
		if dx.Data[i] != w {
			t.Errorf("relu'(%v)·%v = %v, want %v", x.Data[i], dy.Data[i], dx.Data[i], w)
		}
	}
	if !math.IsNaN(float64(dx.Data[6])) {
		t.Errorf("a NaN gradient through an active unit became %v", dx.Data[6])
	}
}

func TestSigmoidBCEClosedForm(t *testing.T) {
	for _, tc := range []struct {
		logit, label float32
		loss, grad   float64 // per example (B = 1)
	}{
		{0, 1, math.Ln2, -0.5},
		{0, 0, math.Ln2, 0.5},
		{2, 1, math.Log1p(math.Exp(-2)), 1/(1+math.Exp(-2)) - 1},
		{-3, 1, 3 + math.Log1p(math.Exp(-3)), 1/(1+math.Exp(3)) - 1},
		{100, 0, 100, 1},   // confidently wrong: log(1+e^100) ≈ 100, no overflow
		{-100, 0, 0, 0},    // confidently right
		{-800, 1, 800, -1}, // e^800 overflows float64 in the naive form
	} {
		d := make([]float32, 1)
		l, err := SigmoidBCE([]float32{tc.logit}, []float32{tc.label}, d)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(l-tc.loss) > 1e-12*math.Max(1, tc.loss) || math.Abs(float64(d[0])-tc.grad) > 1e-7 {
			t.Errorf("BCE(%v, %v) = %v, %v; want %v, %v", tc.logit, tc.label, l, d[0], tc.loss, tc.grad)
		}
	}
	// The mean divides loss and gradient by B.
	d := make([]float32, 2)
	l, _ := SigmoidBCE([]float32{0, 0}, []float32{1, 0}, d)
	if math.Abs(l-math.Ln2) > 1e-12 || d[0] != -0.25 || d[1] != 0.25 {
		t.Errorf("batch of 2: %v %v", l, d)
	}
}

func TestSigmoidBCEErrors(t *testing.T) {
	for _, tc := range []struct {
		name           string
		logits, labels []float32
		want           string
	}{
		{"empty", nil, nil, "0 logits"},
		{"lengths", []float32{1, 2}, []float32{1}, "2 logits, 1 labels"},
		{"nan logit", []float32{0, float32(math.NaN())}, []float32{0, 1}, "logit 1"},
		{"bad label", []float32{0, 1}, []float32{2, 1}, "label 0 is 2"},
	} {
		_, err := SigmoidBCE(tc.logits, tc.labels, make([]float32, len(tc.logits)))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one mentioning %q", tc.name, err, tc.want)
		}
	}
}

func TestSigmoid(t *testing.T) {
	in := []float32{0, 2, -2, 100, -100}
	out := make([]float32, len(in))
	Sigmoid(out, in)
	for i, x := range in {
		if w := 1 / (1 + math.Exp(-float64(x))); math.Abs(float64(out[i])-w) > 1e-7 {
			t.Errorf("σ(%v) = %v, want %v", x, out[i], w)
		}
	}
}

// adamRef runs Adam by the textbook formulas in float64.
func adamRef(w float64, grads []float64, lr, b1, b2, eps float64) float64 {
	var m, v float64
	for t, g := range grads {
		m = b1*m + (1-b1)*g
		v = b2*v + (1-b2)*g*g
		mh := m / (1 - math.Pow(b1, float64(t+1)))
		vh := v / (1 - math.Pow(b2, float64(t+1)))
		w -= lr * mh / (math.Sqrt(vh) + eps)
	}
	return w
}

func TestAdamAgainstTextbook(t *testing.T) {
	grads := [][]float64{{0.5, -2, 1e-3}, {0.1, -1, 3}, {-0.4, 0, 2}}
	w0 := []float64{1, -1, 0.25}
	a := NewAdam(1e-2)
	p := &Param{Name: "w", W: tensor.New(1, 3), G: tensor.New(1, 3)}
	for j, v := range w0 {
		p.W.Data[j] = float32(v)
	}
	for _, g := range grads {
		for j := range g {
			p.G.Data[j] = float32(g[j])
		}
		a.Step([]*Param{p})
	}
	for j := range w0 {
		seq := []float64{grads[0][j], grads[1][j], grads[2][j]}
		want := adamRef(w0[j], seq, 1e-2, 0.9, 0.999, 1e-8)
		if math.Abs(float64(p.W.Data[j])-want) > 1e-6 {
			t.Errorf("w[%d] = %v, want %v", j, p.W.Data[j], want)
		}
	}
	// First step moves each weight by lr·sign(g) (here within ε).
	b := NewAdam(1e-3)
	q := &Param{W: tensor.FromSlice(1, 2, []float32{0, 0}), G: tensor.FromSlice(1, 2, []float32{5, -0.01})}
	b.Step([]*Param{q})
	if !close(q.W.Data, []float32{-1e-3, 1e-3}, 1e-8) || b.T != 1 {
		t.Errorf("first step %v (T=%d), want ∓1e-3", q.W.Data, b.T)
	}
}

func TestEmbeddingLookupAndSparseGrad(t *testing.T) {
	e, err := NewEmbedding([]int{3, 2}, 2, 0.05, rand.New(rand.NewPCG(3, 1)))
	if err != nil {
		t.Fatal(err)
	}
	for f, c := range []int{3, 2} {
		for k := range c {
			w := e.Weight(f, k)
			w[0], w[1] = float32(10*f+k), float32(-(10*f + k))
		}
	}
	ids := []int32{2, 1, 2, 0, 0, 1} // rows: (2,1) (2,0) (0,1)
	out := tensor.New(3, 6)
	for i := range out.Data {
		out.Data[i] = 99
	}
	if err := e.Lookup(ids, 3, out, 1); err != nil {
		t.Fatal(err)
	}
	want := []float32{99, 2, -2, 11, -11, 99, 99, 2, -2, 10, -10, 99, 99, 0, 0, 11, -11, 99}
	if !close(out.Data, want, 0) {
		t.Fatalf("Lookup = %v, want %v", out.Data, want)
	}
	dy := tensor.New(3, 6)
	for i := range dy.Data {
		dy.Data[i] = float32(i)
	}
	e.L2 = 0.5 // gradient 2·0.5·w = w, once per distinct row
	e.Backward(dy, 1)
	for _, tc := range []struct {
		f, k int
		want []float32 // Σ of dy over the rows using it, plus w
	}{
		{0, 2, []float32{1 + 7 + 2, 2 + 8 - 2}},
		{0, 0, []float32{13 + 0, 14 + 0}},
		{1, 1, []float32{3 + 15 + 11, 4 + 16 - 11}},
		{1, 0, []float32{9 + 10, 0}}, // 10 − 10
		{0, 1, nil},
	} {
		g := e.Grad(tc.f, tc.k)
		if (g == nil) != (tc.want == nil) || (g != nil && !close(g, tc.want, 0)) {
			t.Errorf("grad field %d id %d = %v, want %v", tc.f, tc.k, g, tc.want)
		}
	}
	if got, want := e.RegLoss(), 0.5*float64(4+4+0+0+121+121+100+100); math.Abs(got-want) > 1e-9 {
		t.Errorf("RegLoss = %v, want %v", got, want)
	}
	// LazyAdam moves exactly the touched rows, each by lr·sign(g) on step 1.
	before := e.Weight(0, 1)[0]
	opt := NewLazyAdam(0.1)
	opt.Step(e)
	if e.Weight(0, 1)[0] != before {
		t.Error("LazyAdam moved an untouched row")
	}
	if got := e.Weight(0, 2); !close(got, []float32{2 - 0.1, -2 - 0.1}, 1e-6) {
		t.Errorf("row (0,2) after one step %v", got)
	}
	if got := e.Weight(1, 0); !close(got, []float32{10 - 0.1, -10}, 1e-6) {
		t.Errorf("row (1,0) after one step %v (zero gradient must not move)", got)
	}
	// A second batch forgets the first one's touched set.
	if err := e.Lookup([]int32{1, 1}, 1, tensor.New(1, 4), 0); err != nil {
		t.Fatal(err)
	}
	e.L2 = 0
	e.Backward(tensor.New(1, 4), 0)
	if e.Touched() != 2 || e.Grad(0, 2) != nil || e.Grad(0, 1) == nil {
		t.Errorf("second batch: %d touched", e.Touched())
	}
}

// TestLazyAdamL2InOnePassMatchesTwo trains two copies of an embedding
// with L2 on the same batches (ids repeating within a batch and across
// fields' tables of 1 to 300 rows, dims with and without a four-lane
// loop): one reads a gradient after every Backward, which adds the L2 term
// to every touched row on its own pass, before LazyAdam updates the rows
// with AdamRows; the other leaves the term to LazyAdam's one pass
// (AdamRowsL2). Every weight and moment must end the same, bit for bit, at
// one and at several cores.
func TestLazyAdamL2InOnePassMatchesTwo(t *testing.T) {
	for _, dim := range []int{1, 4, 6} {
		for _, procs := range []int{1, 4} {
			t.Run(fmt.Sprintf("dim %d, GOMAXPROCS %d", dim, procs), func(t *testing.T) {
				defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
				cards := []int{1, 7, 300, 40, 3}
				var es [2]*Embedding
				for i := range es {
					e, err := NewEmbedding(cards, dim, 0.5, rand.New(rand.NewPCG(8, 9)))
					if err != nil {
						t.Fatal(err)
					}
					e.L2 = 0.03
					es[i] = e
				}
				opts := [2]*LazyAdam{NewLazyAdam(0.05), NewLazyAdam(0.05)}
				r := rand.New(rand.NewPCG(10, 11))
				const rows = 64
				for step := range 6 {
					ids := make([]int32, rows*len(cards))
					for k := range ids {
						ids[k] = int32(r.IntN(cards[k%len(cards)]))
					}
					dy := tensor.New(rows, len(cards)*dim)
					for k := range dy.Data {
						dy.Data[k] = float32(r.NormFloat64())
					}
					for i, e := range es {
						if err := e.Lookup(ids, rows, tensor.New(rows, len(cards)*dim), 0); err != nil {
							t.Fatal(err)
						}
						e.Backward(dy, 0)
						if i == 0 && e.Grad(2, int(ids[2])) == nil {
							t.Fatalf("step %d: a looked-up row has no gradient", step)
						}
						opts[i].Step(e)
					}
					sameBits(t, fmt.Sprintf("step %d: the store after the two passes and after one", step), [][]float32{es[1].Store()}, [][]float32{es[0].Store()})
				}
			})
		}
	}
}

func TestEmbeddingErrors(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 1))
	if _, err := NewEmbedding([]int{3, 0}, 2, 0.1, r); err == nil || !strings.Contains(err.Error(), "field 1") {
		t.Errorf("zero cardinality: %v", err)
	}
	if _, err := NewEmbedding([]int{3}, 0, 0.1, r); err == nil {
		t.Error("zero dimension accepted")
	}
	e, _ := NewEmbedding([]int{3, 2}, 2, 0.1, r)
	for _, tc := range []struct {
		ids  []int32
		rows int
		dst  *tensor.Matrix
		want string
	}{
		{[]int32{0, 2}, 1, tensor.New(1, 4), "field 1, batch row 0: id 2"},
		{[]int32{0, 1, -1, 0}, 2, tensor.New(2, 4), "field 0, batch row 1: id -1"},
		{[]int32{0, 1, 0}, 2, tensor.New(2, 4), "3 ids"},
		{[]int32{0, 1}, 1, tensor.New(1, 3), "1×3"},
	} {
		err := e.Lookup(tc.ids, tc.rows, tc.dst, 0)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Lookup(%v): %v, want %q", tc.ids, err, tc.want)
		}
	}
}

func BenchmarkDenseReLU1024x128(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	d := NewDense(128, 128, HeNormal, r)
	var relu ReLU
	x := tensor.New(1024, 128)
	for i := range x.Data {
		x.Data[i] = float32(r.NormFloat64())
	}
	b.ReportAllocs()
	for b.Loop() {
		y := relu.Forward(d.Forward(x))
		d.Backward(relu.Backward(y))
	}
}

// TestBadID checks the lookup's range check against a plain loop over
// every id with its field's bound: the first bad id, or none, including
// ids at the bounds, negative ones, more fields than its table of bounds
// holds, and bounds beyond an int32.
func TestBadID(t *testing.T) {
	first := func(ids []int32, cards []int) int {
		for k, id := range ids {
			if id < 0 || int(id) >= cards[k%len(cards)] {
				return k
			}
		}
		return -1
	}
	r := rand.New(rand.NewPCG(9, 9))
	for _, fields := range []int{1, 3, 26, 64, 65, 100} {
		cards := make([]int, fields)
		for f := range cards {
			cards[f] = 1 + r.IntN(1000)
		}
		cards[0] = 1 << 40 // every int32 id ≥ 0 is in range
		ids := make([]int32, 50*fields)
		for k := range ids {
			ids[k] = int32(r.IntN(min(cards[k%fields], math.MaxInt32)))
		}
		for _, bad := range []struct {
			k  int
			id int32
		}{{-1, 0}, {7, -1}, {len(ids) - 1, -5}, {3 * fields, math.MaxInt32}, {5*fields + fields - 1, int32(cards[fields-1])}, {2, math.MinInt32}} {
			x := append([]int32(nil), ids...)
			if bad.k >= 0 {
				x[bad.k] = bad.id
			}
			if got, want := badID(x, cards), first(x, cards); got != want {
				t.Errorf("%d fields, id %d at %d: badID = %d, want %d", fields, bad.id, bad.k, got, want)
			}
		}
	}
}

// TestSigmoidBCESameAtAnyCoreCount checks that the loss and its gradient
// are the same bits at any GOMAXPROCS (the rows are cut among the cores
// above bceGrain each) and equal to the loop over the rows in order, and
// that the first bad row is the one an error names.
func TestSigmoidBCESameAtAnyCoreCount(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	n := 5000
	logits, labels := make([]float32, n), make([]float32, n)
	for i := range logits {
		logits[i] = float32(4 * r.NormFloat64())
		labels[i] = float32(r.IntN(2))
	}
	// The reference: each term in float64, summed in row order.
	var want float64
	wantD := make([]float32, n)
	for i, l32 := range logits {
		l, y := float64(l32), float64(labels[i])
		want += math.Max(l, 0) - l*y + math.Log1p(math.Exp(-math.Abs(l)))
		wantD[i] = float32((1/(1+math.Exp(-l)) - y) / float64(n))
	}
	want /= float64(n)
	for _, procs := range []int{1, 2, 3, 16} {
		old := runtime.GOMAXPROCS(procs)
		d := make([]float32, n)
		got, err := SigmoidBCE(logits, labels, d)
		bl := append([]float32(nil), labels...)
		bl[4000], bl[3000] = -1, 2
		bad := append([]float32(nil), logits...)
		bad[2500] = float32(math.Inf(1))
		_, err1 := SigmoidBCE(logits, bl, make([]float32, n))
		_, err2 := SigmoidBCE(bad, bl, make([]float32, n))
		runtime.GOMAXPROCS(old)
		if err != nil {
			t.Fatal(err)
		}
		if math.Float64bits(got) != math.Float64bits(want) {
			t.Errorf("GOMAXPROCS %d: loss %v, want %v (bit for bit)", procs, got, want)
		}
		for i := range d {
			if math.Abs(float64(d[i]-wantD[i])) > 1e-9 {
				t.Fatalf("GOMAXPROCS %d: gradient %d is %v, want %v", procs, i, d[i], wantD[i])
			}
		}
		if err1 == nil || !strings.Contains(err1.Error(), "label 3000 is 2") {
			t.Errorf("GOMAXPROCS %d: bad labels at 3000 and 4000: %v", procs, err1)
		}
		if err2 == nil || !strings.Contains(err2.Error(), "logit 2500 is +Inf") {
			t.Errorf("GOMAXPROCS %d: bad logit at 2500: %v", procs, err2)
		}
	}
}

// TestLookupThenSeesEachRowOnce checks that LookupThen's then covers every
// batch row once, after the row's vectors are written (it reads them back
// against the tables' weights), at any GOMAXPROCS, and that it does not
// run on an error.
func TestLookupThenSeesEachRowOnce(t *testing.T) {
	r := rand.New(rand.NewPCG(12, 13))
	cards := []int{50, 7, 300, 1, 90}
	rows := 2000
	ids := make([]int32, rows*len(cards))
	for k := range ids {
		ids[k] = int32(r.IntN(cards[k%len(cards)]))
	}
	for _, procs := range []int{1, 2, 3, 16} {
		old := runtime.GOMAXPROCS(procs)
		e, _ := NewEmbedding(cards, 3, 0.1, rand.New(rand.NewPCG(1, 2)))
		dst := tensor.New(rows, 1+len(cards)*3)
		seen := make([]int32, rows)
		var bad atomic.Int32
		err := e.LookupThen(ids, rows, dst, 1, func(i0, i1 int) {
			for i := i0; i < i1; i++ {
				seen[i]++
				for f := range cards {
					w := e.Weight(f, int(ids[i*len(cards)+f]))
					for k, v := range w {
						if dst.At(i, 1+f*3+k) != v {
							bad.Add(1)
						}
					}
				}
			}
		})
		ran := false
		ids[17] = -1
		err2 := e.LookupThen(ids, rows, dst, 1, func(int, int) { ran = true })
		ids[17] = 0
		runtime.GOMAXPROCS(old)
		if err != nil || err2 == nil || ran {
			t.Fatalf("GOMAXPROCS %d: errors %v, %v; then ran on the error: %v", procs, err, err2, ran)
		}
		for i, n := range seen {
			if n != 1 {
				t.Fatalf("GOMAXPROCS %d: row %d seen %d times", procs, i, n)
			}
		}
		if n := bad.Load(); n != 0 {
			t.Errorf("GOMAXPROCS %d: then read %d values not yet written", procs, n)
		}
	}
}

// TestAdamBesideLazyAdam checks that a dense Adam's update run as extra
// parts of the embedding's lazy update (Adam.Begin, LazyAdam.StepWith)
// gives the same bits as Adam.Step and LazyAdam.Step one after the other,
// at any GOMAXPROCS, and that each part runs once.
func TestAdamBesideLazyAdam(t *testing.T) {
	build := func() (*Embedding, []*Param) {
		r := rand.New(rand.NewPCG(21, 22))
		e, _ := NewEmbedding([]int{40, 30, 20}, 4, 0.1, r)
		var ps []*Param
		for range 2 {
			d := NewDense(33, 17, HeNormal, r)
			for _, p := range d.Params() {
				for i := range p.G.Data {
					p.G.Data[i] = float32(r.NormFloat64())
				}
			}
			ps = append(ps, d.Params()...)
		}
		ids := make([]int32, 50*3)
		for k := range ids {
			ids[k] = int32(r.IntN([]int{40, 30, 20}[k%3]))
		}
		x := tensor.New(50, 12)
		if err := e.Lookup(ids, 50, x, 0); err != nil {
			t.Fatal(err)
		}
		for i := range x.Data {
			x.Data[i] = float32(r.NormFloat64())
		}
		e.Backward(x, 0)
		return e, ps
	}
	snapshot := func(e *Embedding, ps []*Param) []float32 {
		out := append([]float32(nil), e.Store()...)
		for _, p := range ps {
			out = append(out, p.W.Data...)
		}
		return out
	}
	e, ps := build()
	a, la := NewAdam(0.01), NewLazyAdam(0.01)
	a.Step(ps)
	la.Step(e)
	want := snapshot(e, ps)
	for _, procs := range []int{1, 2, 3, 16} {
		old := runtime.GOMAXPROCS(procs)
		e, ps := build()
		a, la := NewAdam(0.01), NewLazyAdam(0.01)
		parts, part := a.Begin(ps)
		ran := make([]atomic.Int32, parts)
		la.StepWith(e, parts, func(i int) { ran[i].Add(1); part(i) })
		runtime.GOMAXPROCS(old)
		for i := range ran {
			if n := ran[i].Load(); n != 1 {
				t.Fatalf("GOMAXPROCS %d: part %d ran %d times", procs, i, n)
			}
		}
		got := snapshot(e, ps)
		for i := range want {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("GOMAXPROCS %d: value %d is %v, want %v", procs, i, got[i], want[i])
			}
		}
		if a.T != 1 || la.T != 1 {
			t.Errorf("GOMAXPROCS %d: steps counted %d and %d, want 1", procs, a.T, la.T)
		}
	}
}
