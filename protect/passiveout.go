package protect

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"

	"github.com/splitguard/splitguard/nn"
	"github.com/splitguard/splitguard/tensor"
)

// passiveSeed keys the passive party's draws: the run's seed mixed with a
// constant, so that a defence on the passive side never draws the same
// numbers as its twin on the active side.
const passiveSeed = 0x70617373697665 // "passive"

// PassiveOutput is an add-on defence's layer at the passive party's output
// (MID or FedPass on the passive side): it maps the bottom model's cut
// embedding to the embedding the passive party sends, keeps the same
// width, and may add a local regulariser whose gradient the passive party
// adds to the gradient it receives. It needs no label: the passive party
// computes and differentiates it alone. Its parameters are part of the
// bottom model (saved and loaded with it) and it runs at evaluation and
// inference too.
type PassiveOutput interface {
	InputLayer
	// Backprop returns what Backward returns for g at the last training
	// Forward (∂L/∂input, the regulariser's gradient included) but leaves
	// the parameter gradients and Step's state alone (the audit's oracle).
	// Its buffers are separate from Backward's.
	Backprop(g *tensor.Matrix) (*tensor.Matrix, error)
}

// registerBothSides registers a layer that works on either side of the
// cut: name, an input layer in front of the active party's top model, and
// name_passive, the same layer at the passive party's output. params gives
// a side's parameters from its key prefix ("name_" or "name_passive_"),
// the mark of its symbols ("" or "p") and where[0] or where[1] (how its
// help names the side); colors are the two sides' colours; build makes
// the layer from a side's prefix.
func registerBothSides[L PassiveOutput](name, help, passiveHelp string, where [2]string, colors [2]uint32,
	params func(prefix, mark, where string) []Param,
	build func(p Params, prefix string, o InputOptions) (L, error)) {
	side := func(prefix string, p Params, o InputOptions) (PassiveOutput, error) {
		l, err := build(p, prefix, o)
		if err != nil {
			return nil, err // not a nil L in a non-nil interface
		}
		return l, nil
	}
	Register(Spec{Name: name, Role: AddOn, Color: colors[0], Help: help, Params: params(name+"_", "", where[0]),
		NewInput: func(p Params, o InputOptions) (InputLayer, error) { return side(name+"_", p, o) }})
	Register(Spec{Name: name + "_passive", Role: AddOn, Color: colors[1], Help: passiveHelp, Params: params(name+"_passive_", "p", where[1]),
		NewPassiveOutput: func(p Params, o InputOptions) (PassiveOutput, error) { return side(name+"_passive_", p, o) }})
}

// BuildPassiveOutput returns the layer at the passive party's output that
// parameters p turn on, or nil when none is on. At most one may be. The
// layer's draws are keyed by o.Seed mixed with a passive-side constant.
func BuildPassiveOutput(p Params, o InputOptions) (PassiveOutput, error) {
	o.Seed ^= passiveSeed
	return buildOne(p, "layer at the passive party's output", func(s *Spec) (PassiveOutput, bool, error) {
		if s.NewPassiveOutput == nil {
			return nil, false, nil
		}
		l, err := s.NewPassiveOutput(p, o)
		return l, true, err
	})
}

// PassiveSettings lists the parameters of the passive-side defences that p
// sets, as sorted "key=value" strings: the settings both parties must
// agree on (the passive applies them, the active records them).
func PassiveSettings(p Params) []string {
	var out []string
	for k, v := range p {
		if s, ok := ParamOwner(k); ok && s.NewPassiveOutput != nil {
			out = append(out, k+"="+strconv.FormatFloat(v, 'g', -1, 64))
		}
	}
	sort.Strings(out)
	return out
}

// adamStep is a trained defence layer's Step: one Adam update of params,
// refused (naming the layer) unless a Backward readied it (*pending),
// which it then clears.
func adamStep(name string, pending *bool, params []*nn.Param, opt *nn.Adam) error {
	if !*pending {
		return errors.New(name + ": Step without a Backward since the last Step")
	}
	opt.Step(params)
	*pending = false
	return nil
}

// writeParams appends the values of params with the optimiser's moments
// and step count to a state.
func writeParams(sw *stateWriter, params []*nn.Param, opt *nn.Adam) {
	sw.u64(uint64(opt.T))
	for i, p := range params {
		for _, t := range []*tensor.Matrix{p.W, opt.M[i], opt.V[i]} {
			sw.u32(len(t.Data))
			for _, v := range t.Data {
				sw.f32(v)
			}
		}
	}
}

// readParams reads what writeParams wrote for parameters of the shapes of
// params; apply stores it (call it once sr.done() succeeds).
func readParams(sr *stateReader, params []*nn.Param, opt *nn.Adam) (apply func()) {
	t := sr.u64()
	if sr.err == nil && t > math.MaxInt64 {
		sr.err = fmt.Errorf("optimiser step count %d", t)
	}
	vals := make([][]float32, 0, 3*len(params))
	for i, p := range params {
		for _, want := range []*tensor.Matrix{p.W, opt.M[i], opt.V[i]} {
			vals = append(vals, readFloats(sr, "parameter "+p.Name, len(want.Data)))
		}
	}
	return func() {
		opt.T = int64(t)
		for i, p := range params {
			copy(p.W.Data, vals[3*i])
			copy(opt.M[i].Data, vals[3*i+1])
			copy(opt.V[i].Data, vals[3*i+2])
		}
	}
}

// readFloats reads a length-prefixed run of n finite float32 values.
func readFloats(sr *stateReader, what string, n int) []float32 {
	if m := sr.u32(); sr.err == nil && m != n {
		sr.err = fmt.Errorf("%s: %d values, want %d", what, m, n)
	}
	if sr.err != nil {
		return nil
	}
	v := make([]float32, n)
	for j := range v {
		v[j] = sr.f32()
		if x := float64(v[j]); sr.err == nil && (math.IsNaN(x) || math.IsInf(x, 0)) {
			sr.err = fmt.Errorf("%s: value %d is %v", what, j, v[j])
		}
	}
	return v
}

// writeFloats appends a length-prefixed run of float32 values.
func writeFloats(sw *stateWriter, v []float32) {
	sw.u32(len(v))
	for _, x := range v {
		sw.f32(x)
	}
}
