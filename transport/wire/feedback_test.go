package wire

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/splitguard/splitguard/tensor"
)

// TestFeedbackByHand follows the residuals of one example through
// several sends, worked out by hand: bfloat16 keeps 7 mantissa bits
// (ulp 2^-7 at 1, half an ulp 2^-8 = 4·2^-10, ties to even), and int8
// with a row maximum of 127 has scale 1. Each send's residual is v −
// Round(v) with v the value plus the previous residual, and what was
// sent plus the last residual always adds up to what was meant.
func TestFeedbackByHand(t *testing.T) {
	u := float32(math.Ldexp(1, -10))
	tests := []struct {
		name  string
		enc   Encoding
		in    []float32   // the same row sent again and again
		sent  [][]float32 // what each send puts on the wire
		resid [][]float32 // the residual after each send
	}{
		{"bf16", BF16, []float32{1 + u},
			// v = 1+u → 1; 1+2u → 1; 1+3u → 1; 1+4u is the tie → even 1; 1+5u → 1+8u.
			[][]float32{{1}, {1}, {1}, {1}, {1 + 8*u}},
			[][]float32{{u}, {2 * u}, {3 * u}, {4 * u}, {-3 * u}}},
		{"int8", Int8, []float32{127, 0.375},
			// Scale 1: 3/8 → 0; 6/8 → 1; 1/8 → 0; 4/8 ties to even 0; 7/8 → 1; 2/8 → 0.
			[][]float32{{127, 0}, {127, 1}, {127, 0}, {127, 0}, {127, 1}, {127, 0}},
			[][]float32{{0, 0.375}, {0, -0.25}, {0, 0.125}, {0, 0.5}, {0, -0.125}, {0, 0.25}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cols := len(tc.in)
			f, err := NewFeedback(tc.enc, 3, cols)
			if err != nil {
				t.Fatal(err)
			}
			sum := make([]float64, cols)
			for k := range tc.sent {
				m := matrix(1, cols, tc.in...)
				if err := f.Round(m, []int{1}); err != nil {
					t.Fatal(err)
				}
				for c := range cols {
					sum[c] += float64(m.Data[c])
					if m.Data[c] != tc.sent[k][c] {
						t.Errorf("send %d column %d: sent %v, want %v", k, c, m.Data[c], tc.sent[k][c])
					}
					if d := math.Abs(float64(f.Residual(1)[c] - tc.resid[k][c])); d > 1e-6 {
						t.Errorf("send %d column %d: residual %v, want %v", k, c, f.Residual(1)[c], tc.resid[k][c])
					}
					// Σ sent + residual = Σ meant (k+1 times the value).
					if d := math.Abs(sum[c] + float64(f.Residual(1)[c]) - float64(k+1)*float64(tc.in[c])); d > 1e-5 {
						t.Errorf("send %d column %d: sent %v plus residual %v ≠ %d × %v", k, c, sum[c], f.Residual(1)[c], k+1, tc.in[c])
					}
				}
				for _, other := range []int{0, 2} { // the other examples keep zero residuals
					for _, v := range f.Residual(other) {
						if v != 0 {
							t.Fatalf("example %d got residual %v from example 1's sends", other, v)
						}
					}
				}
			}
		})
	}
}

// TestFeedbackRows checks that the rows of one matrix use and update
// their own examples' residuals, and that a failed rounding changes
// neither the matrix nor the residuals.
func TestFeedbackRows(t *testing.T) {
	u := float32(math.Ldexp(1, -10))
	f, err := NewFeedback(BF16, 4, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Round(matrix(2, 1, 1+u, 1+3*u), []int{3, 0}); err != nil {
		t.Fatal(err)
	}
	// Example 3 keeps u, example 0 keeps 3u; sending 1+u for both now
	// gives 1+2u → 1 for example 3 and 1+4u → 1 (tie, even) for 0, and
	// then 1+3u for 3 and 1+5u → 1+8u for 0.
	m := matrix(2, 1, 1+u, 1+u)
	if err := f.Round(m, []int{0, 3}); err != nil {
		t.Fatal(err)
	}
	if m.Data[0] != 1 || m.Data[1] != 1 || f.Residual(0)[0] != 4*u || f.Residual(3)[0] != 2*u {
		t.Fatalf("sent %v, residuals %v, %v; want [1 1], 4u, 2u", m.Data, f.Residual(0), f.Residual(3))
	}
	f16, err := NewFeedback(F16, 2, 2)
	if err != nil {
		t.Fatal(err)
	}
	if err := f16.Round(matrix(1, 2, 0.5, 1+float32(math.Ldexp(1, -12))), []int{1}); err != nil {
		t.Fatal(err)
	}
	before := append([]float32(nil), f16.Residual(1)...)
	bad := matrix(2, 2, 1, 2, 70000, 3)
	err = f16.Round(bad, []int{1, 0})
	if err == nil || !strings.Contains(err.Error(), "65504") {
		t.Fatalf("a value beyond float16's range gave %v", err)
	}
	if !bitsEqual(bad.Data, []float32{1, 2, 70000, 3}) || !bitsEqual(f16.Residual(1), before) || f16.Residual(0)[0] != 0 {
		t.Fatalf("a failed rounding changed the matrix %v or the residuals %v %v", bad.Data, f16.Residual(1), f16.Residual(0))
	}
	for _, tc := range []struct {
		m    *tensor.Matrix
		rows []int
		want string
	}{
		{matrix(1, 3, 1, 2, 3), []int{0}, "1×3 matrix"},
		{matrix(2, 2, 1, 2, 3, 4), []int{0}, "2×2 matrix for 1 examples"},
		{matrix(1, 2, 1, 2), []int{2}, "example 2, outside 0…1"},
	} {
		if err := f16.Round(tc.m, tc.rows); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Round(%d×%d, %v) = %v, want an error containing %q", tc.m.Rows, tc.m.Cols, tc.rows, err, tc.want)
		}
	}
	if _, err := NewFeedback(F32, 2, 2); err == nil || !strings.Contains(err.Error(), "lossy") {
		t.Errorf("error feedback on f32 gave %v", err)
	}
	// 45 million Criteo rows × 128 columns: 21.5 GiB.
	if _, err := NewFeedback(Int8, 45_000_000, 128); err == nil || !strings.Contains(err.Error(), "21.5 GiB of residuals, more than the 8 GiB allowed") {
		t.Errorf("error feedback for 45 million rows × 128 gave %v", err)
	}
}

// TestFeedbackState checks that residuals survive MarshalBinary and
// UnmarshalBinary bit for bit and that a state of another shape is
// refused.
func TestFeedbackState(t *testing.T) {
	f, _ := NewFeedback(Int8, 3, 2)
	if err := f.Round(matrix(3, 2, 127, 0.3, -5, 0.01, 1, 1e-3), []int{0, 1, 2}); err != nil {
		t.Fatal(err)
	}
	b, _ := f.MarshalBinary()
	g, _ := NewFeedback(Int8, 3, 2)
	if err := g.UnmarshalBinary(b); err != nil {
		t.Fatal(err)
	}
	if !bitsEqual(f.residual, g.residual) {
		t.Fatalf("restored %v, saved %v", g.residual, f.residual)
	}
	for _, other := range []*Feedback{must(NewFeedback(BF16, 3, 2)), must(NewFeedback(Int8, 4, 2)), must(NewFeedback(Int8, 2, 3))} {
		if err := other.UnmarshalBinary(b); err == nil {
			t.Errorf("a state of int8, 3 × 2 loaded into %v, %d × %d", other.enc, len(other.residual)/other.cols, other.cols)
		}
	}
	if err := g.UnmarshalBinary(b[:len(b)-1]); err == nil {
		t.Error("a truncated state loaded")
	}
}

func must(f *Feedback, err error) *Feedback {
	if err != nil {
		panic(err)
	}
	return f
}

// TestFeedbackConverges trains a linear bottom e = Wᵀx by full-batch
// gradient descent on ½‖e − y‖² (the weights averaged over the second
// half of the epochs, as in the analyses of error feedback), sending the per-example gradient rows
// e − y as f32, as int8 (int4), and as int8 (int4) with error feedback. The first
// output column is 1000 times larger than the others, in the targets and
// in their noise, so at the optimum every gradient row's first value is
// of the noise's size and the others fall below half an int8 step: plain
// int8 rounds them to zero and never learns the small columns, while
// error feedback carries them until they count. The f32 run's weights
// are the reference.
func TestFeedbackConverges(t *testing.T) {
	const n, p, k, epochs, lr = 64, 4, 3, 300, 0.5
	rng := rand.New(rand.NewPCG(7, 1))
	scale := []float64{1000, 1, 1}
	x := make([]float64, n*p)
	for i := range x {
		x[i] = rng.NormFloat64()
	}
	y := make([]float64, n*k)
	for i := range n {
		for c := range k {
			v := 0.0
			for j := range p {
				v += x[i*p+j] * float64(j+c+1) * scale[c] / 4
			}
			y[i*k+c] = v + scale[c]*rng.NormFloat64()
		}
	}
	train := func(enc Encoding, feedback bool) []float64 {
		w := make([]float64, p*k)
		var f *Feedback
		if feedback {
			f, _ = NewFeedback(enc, n, k)
		}
		g := tensor.New(n, k)
		rows := make([]int, n)
		for i := range rows {
			rows[i] = i
		}
		avg := make([]float64, p*k)
		for ep := range epochs {
			for i := range n {
				for c := range k {
					e := 0.0
					for j := range p {
						e += x[i*p+j] * w[j*k+c]
					}
					g.Data[i*k+c] = float32(e - y[i*k+c])
				}
			}
			var err error
			if f != nil {
				err = f.Round(g, rows)
			} else {
				err = enc.Round(g)
			}
			if err != nil {
				t.Fatal(err)
			}
			for j := range p {
				for c := range k {
					s := 0.0
					for i := range n {
						s += x[i*p+j] * float64(g.Data[i*k+c])
					}
					w[j*k+c] -= lr * s / n
					if ep >= epochs/2 {
						avg[j*k+c] += w[j*k+c] / (epochs - epochs/2)
					}
				}
			}
		}
		return avg
	}
	ref := train(F32, false)
	// dist is the largest relative error of the small columns' weights.
	dist := func(w []float64) float64 {
		d := 0.0
		for j := range p {
			for c := 1; c < k; c++ {
				d = max(d, math.Abs(w[j*k+c]-ref[j*k+c])/math.Abs(ref[j*k+c]))
			}
		}
		return d
	}
	// int4's step is 18 times int8's (max|v|/7 against /127): a small
	// column's value (a thousandth of the row's largest) is carried for
	// about 140 epochs before it adds up to one int4 step, so the weights
	// wander about f32's more (0.10 at this seed, against plain int4's
	// 1.28).
	for _, tc := range []struct {
		enc   Encoding
		bound float64
	}{{Int8, 0.02}, {Int4, 0.15}} {
		plain, ef := dist(train(tc.enc, false)), dist(train(tc.enc, true))
		t.Logf("small columns' largest relative weight error against f32: %v %.3g, %v with error feedback %.3g", tc.enc, plain, tc.enc, ef)
		if plain < 0.1 {
			t.Fatalf("plain %v came within %.3g of f32: the problem does not show its bias", tc.enc, plain)
		}
		if ef > tc.bound || ef > plain/10 {
			t.Fatalf("%v with error feedback is %.3g off f32 (plain %.3g), want within %g and a tenth of plain %v's", tc.enc, ef, plain, tc.bound, tc.enc)
		}
	}
}
