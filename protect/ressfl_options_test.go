package protect

import (
	"bytes"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/splitguard/splitguard/tensor"
)

// ressflLoss is L(e) = Σ g·z(e) − λ·R(z(e)) for ResSFL r with a rank-b
// bottleneck, computed in float64 from its definition: z = e·W_d·W_u and
// R the decoder's mean squared error against x. Its gradient with respect
// to e is what Backward must return for the task gradient g.
func ressflLoss(r *ResSFL, e, g, x *tensor.Matrix, lambda float64) float64 {
	b := r.opts.Bottleneck
	wd, wu := r.bn[0].W, r.bn[1].W
	z := tensor.New(e.Rows, r.d)
	for i := range e.Rows {
		for c := range r.d {
			var s float64
			for m := range b {
				var hm float64
				for j := range r.d {
					hm += float64(e.At(i, j)) * float64(wd.At(j, m))
				}
				s += hm * float64(wu.At(m, c))
			}
			z.Set(i, c, float32(s))
		}
	}
	var task float64
	for i, v := range z.Data {
		task += float64(g.Data[i]) * float64(v)
	}
	y := r.out.Forward(r.relu.Forward(r.enc.Forward(z)))
	var rec float64
	for i, v := range y.Data {
		d := float64(v) - float64(x.Data[i])
		rec += d * d
	}
	return task - lambda*rec/float64(len(y.Data))
}

// TestResSFLBottleneckGradients: with a bottleneck the embedding sent is
// e·W_d·W_u, and the gradient Backward returns, and the bottleneck's
// parameter gradients, are those of L = Σ g·z − λ·R by central
// differences; evaluation sends the same z.
func TestResSFLBottleneckGradients(t *testing.T) {
	const lambda = 0.7
	r, err := NewResSFLWith(3, 2, lambda, 1e-2, 5, ResSFLOptions{Bottleneck: 2, DecoderSteps: 1})
	if err != nil {
		t.Fatal(err)
	}
	e, x := ressflBatch(3)
	g := ressflTaskGradient()
	r.SetFeatures(x, nil, 0)
	sent, err := r.Forward(e, true)
	if err != nil {
		t.Fatal(err)
	}
	sent = sent.Clone()
	got, err := r.Backward(g)
	if err != nil {
		t.Fatal(err)
	}
	const h = 1e-3
	diff := func(m *tensor.Matrix, i int) float64 {
		orig := m.Data[i]
		m.Data[i] = orig + h
		up := ressflLoss(r, e, g, x, lambda)
		m.Data[i] = orig - h
		down := ressflLoss(r, e, g, x, lambda)
		m.Data[i] = orig
		return (up - down) / (2 * h)
	}
	for i := range e.Data {
		if fd := diff(e, i); math.Abs(float64(got.Data[i])-fd) > 1e-4 {
			t.Errorf("∂L/∂e[%d] = %.6f, central difference %.6f", i, got.Data[i], fd)
		}
	}
	for _, p := range r.bn {
		for i := range p.W.Data {
			if fd := diff(p.W, i); math.Abs(float64(p.G.Data[i])-fd) > 1e-4 {
				t.Errorf("∂L/∂%s[%d] = %.6f, central difference %.6f", p.Name, i, p.G.Data[i], fd)
			}
		}
	}
	ev, err := r.Forward(e, false)
	if err != nil {
		t.Fatal(err)
	}
	for i := range ev.Data {
		if ev.Data[i] != sent.Data[i] {
			t.Fatalf("evaluation sent %v at %d, training %v", ev.Data[i], i, sent.Data[i])
		}
	}
}

// TestResSFLWarmupAndDecoderSteps: during the warm-up the bottom receives
// the task gradient unchanged and RegLoss is 0, after it g − λ·∂R/∂e;
// five decoder steps a batch bring R lower than one does over the same
// batches; the state (bottleneck and batch count included) round-trips
// and a bottleneck of another rank is refused.
func TestResSFLWarmupAndDecoderSteps(t *testing.T) {
	e, x := ressflBatch(4)
	g := tensor.New(8, 3)
	for i := range g.Data {
		g.Data[i] = 0.02
	}
	run := func(o ResSFLOptions, batches int) (*ResSFL, []bool) {
		r, err := NewResSFLWith(3, 2, 1, 1e-2, 7, o)
		if err != nil {
			t.Fatal(err)
		}
		r.SetFeatures(x, nil, 0)
		var plain []bool
		for range batches {
			if _, err := r.Forward(e, true); err != nil {
				t.Fatal(err)
			}
			out, err := r.Backward(g)
			if err != nil {
				t.Fatal(err)
			}
			same := r.RegLoss() == 0
			for i := range out.Data {
				same = same && out.Data[i] == g.Data[i]
			}
			plain = append(plain, same)
			if err := r.Step(); err != nil {
				t.Fatal(err)
			}
		}
		return r, plain
	}
	_, plain := run(ResSFLOptions{DecoderSteps: 1, Warmup: 3}, 5)
	if want := []bool{true, true, true, false, false}; !slices.Equal(plain, want) {
		t.Errorf("task gradient unchanged per batch %v, want %v (warm-up of 3)", plain, want)
	}
	one, _ := run(ResSFLOptions{DecoderSteps: 1, Warmup: 100}, 20)
	five, _ := run(ResSFLOptions{DecoderSteps: 5, Warmup: 100}, 20)
	for _, r := range []*ResSFL{one, five} {
		if _, err := r.Forward(e, true); err != nil {
			t.Fatal(err)
		}
	}
	if !(five.Reconstruction() < 0.5*one.Reconstruction()) {
		t.Errorf("R after 20 batches: %g with 5 decoder steps a batch, %g with 1", five.Reconstruction(), one.Reconstruction())
	}
	a, _ := run(ResSFLOptions{Bottleneck: 2, DecoderSteps: 2, Warmup: 1}, 3)
	b, _ := NewResSFLWith(3, 2, 1, 1e-2, 99, ResSFLOptions{Bottleneck: 2, DecoderSteps: 2, Warmup: 1})
	buf := sameAfterLoad(t, a, b, e, x, g)
	other, _ := NewResSFLWith(3, 2, 1, 1e-2, 9, ResSFLOptions{Bottleneck: 1, DecoderSteps: 1})
	if err := other.Load(bytes.NewReader(buf.Bytes())); err == nil || !strings.Contains(err.Error(), "bottleneck") {
		t.Errorf("a bottleneck of another rank loaded: %v", err)
	}
	for _, o := range []ResSFLOptions{{DecoderSteps: 0}, {DecoderSteps: 1, Bottleneck: -1}, {DecoderSteps: 1, Warmup: -1}} {
		if _, err := NewResSFLWith(3, 2, 1, 1e-2, 1, o); err == nil || !strings.Contains(err.Error(), "key ressfl_") {
			t.Errorf("options %+v: %v, want an error naming the key", o, err)
		}
	}
}

// TestResSFLBoundedForm: with a threshold τ the bottom's gradient is
// g − (λ/V)·∂R/∂z while the decoder's batch R² = 1 − R/V exceeds τ (V the
// batch variance of x computed here, ∂R/∂z by central differences) and
// RegLoss is λ·(1 − R/V − τ); with τ above the decoder's R² the gradient
// is g bit for bit and RegLoss 0.
func TestResSFLBoundedForm(t *testing.T) {
	const lambda = 0.7
	e, x := ressflBatch(3)
	g := ressflTaskGradient()
	var mean [2]float64
	for i := range 8 {
		mean[0] += float64(x.Data[2*i]) / 8
		mean[1] += float64(x.Data[2*i+1]) / 8
	}
	var v float64
	for i := range 8 {
		for j := range 2 {
			d := float64(x.Data[2*i+j]) - mean[j]
			v += d * d / 16
		}
	}
	for _, tc := range []struct {
		tau    float64
		pushed bool
	}{{-5, true}, {0.99, false}} {
		r, err := NewResSFLWith(3, 2, lambda, 1e-2, 5, ResSFLOptions{DecoderSteps: 1, Bounded: true, Threshold: tc.tau})
		if err != nil {
			t.Fatal(err)
		}
		r.SetFeatures(x, nil, 0)
		if _, err := r.Forward(e, true); err != nil {
			t.Fatal(err)
		}
		rec := func(z *tensor.Matrix) float64 { return decoderError(r, z, x) }
		R := rec(e)
		s := 1 - R/v
		if tc.pushed != (s > tc.tau) {
			t.Fatalf("τ = %v: the decoder's batch R² is %v, the case needs it on the other side", tc.tau, s)
		}
		wantReg := 0.0
		if tc.pushed {
			wantReg = lambda * (s - tc.tau)
		}
		if math.Abs(r.RegLoss()-wantReg) > 1e-6 {
			t.Errorf("τ = %v: RegLoss %v, want %v", tc.tau, r.RegLoss(), wantReg)
		}
		got, err := r.Backward(g)
		if err != nil {
			t.Fatal(err)
		}
		const h = 1e-3
		for i := range e.Data {
			want := float64(g.Data[i])
			if tc.pushed {
				p := e.Clone()
				p.Data[i] += h
				up := rec(p)
				p.Data[i] -= 2 * h
				want -= lambda / v * (up - rec(p)) / (2 * h)
			}
			if math.Abs(float64(got.Data[i])-want) > 1e-4 || (!tc.pushed && got.Data[i] != g.Data[i]) {
				t.Errorf("τ = %v, element %d: gradient %.6f, want %.6f", tc.tau, i, got.Data[i], want)
			}
		}
	}
	if _, err := NewResSFLWith(3, 2, 1, 1e-2, 1, ResSFLOptions{DecoderSteps: 1, Bounded: true, Threshold: 1}); err == nil || !strings.Contains(err.Error(), "ressfl_threshold") {
		t.Errorf("τ = 1: %v", err)
	}
}
