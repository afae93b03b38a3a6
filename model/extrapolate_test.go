package model

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/splitguard/splitguard/tensor"
)

// TestExtrapolate steps a small bottom once and checks that Extrapolate(f)
// moves every dense weight and bias to after + f·(after − before), from
// copies the test took around the Step, that Restore puts back every value
// bit for bit (and the forward with them), and the refusals.
func TestExtrapolate(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 9))
	bot, _, s := smallWDL(t, 5)
	if err := bot.Extrapolate(1); err == nil {
		t.Error("Extrapolate before TrackUpdates was accepted")
	}
	bot.TrackUpdates()
	in := randomBatch(r, s, 4)
	snapshot := func() [][]float32 {
		var out [][]float32
		for _, p := range bot.params {
			out = append(out, slices.Clone(p.W.Data))
		}
		return out
	}
	e := must(bot.Forward(in))
	g := tensor.New(e.Rows, e.Cols)
	for i := range g.Data {
		g.Data[i] = float32(r.NormFloat64())
	}
	if _, err := bot.Backward(g); err != nil {
		t.Fatal(err)
	}
	before := snapshot()
	if err := bot.Step(); err != nil {
		t.Fatal(err)
	}
	after := snapshot()
	plain := slices.Clone(must(bot.Forward(in)).Data)

	const f = 2.5
	if err := bot.Extrapolate(f); err != nil {
		t.Fatal(err)
	}
	moved := 0
	for i, p := range bot.params {
		for j, w := range p.W.Data {
			want := after[i][j] + f*(after[i][j]-before[i][j])
			// A tolerance: the compiler may fuse the multiply-add.
			if math.Abs(float64(w-want)) > 1e-6*(1+math.Abs(float64(want))) {
				t.Fatalf("%s[%d]: extrapolated %v, want %v (before %v, after %v)", p.Name, j, w, want, before[i][j], after[i][j])
			}
			if w != after[i][j] {
				moved++
			}
		}
	}
	if moved == 0 {
		t.Fatal("no weight moved: the Step changed nothing")
	}
	if slices.Equal(must(bot.Forward(in)).Data, plain) {
		t.Error("the forward at extrapolated weights equals the forward at the current ones")
	}
	if err := bot.Extrapolate(f); err == nil {
		t.Error("a second Extrapolate without Restore was accepted")
	}
	if _, err := bot.Backward(g); err != nil {
		t.Fatal(err)
	}
	if err := bot.Step(); err == nil {
		t.Error("a Step while extrapolated was accepted")
	}
	bot.Restore()
	for i, p := range bot.params {
		if !slices.Equal(p.W.Data, after[i]) {
			t.Fatalf("%s: Restore did not put back the weights", p.Name)
		}
	}
	if !slices.Equal(must(bot.Forward(in)).Data, plain) {
		t.Error("the forward after Restore differs from the one before Extrapolate")
	}
	bot.Restore() // a second Restore does nothing
	for i, p := range bot.params {
		if !slices.Equal(p.W.Data, after[i]) {
			t.Fatalf("%s: a second Restore changed the weights", p.Name)
		}
	}
}
