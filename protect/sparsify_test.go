package protect

import (
	"cmp"
	"math"
	"slices"
	"testing"

	"github.com/splitguard/splitguard/tensor"
)

// checkTopShare checks that out keeps exactly n − ⌊p·n⌋ entries of g
// (the group's indices idx), unchanged, and that every kept magnitude is
// at least every dropped one: the defining property, checked pair by pair.
func checkTopShare(t *testing.T, name string, g, out []float32, idx []int, wantDrop int) {
	t.Helper()
	var kept, dropped []int
	for _, k := range idx {
		switch out[k] {
		case g[k]:
			kept = append(kept, k)
		case 0:
			dropped = append(dropped, k)
		default:
			t.Fatalf("%s: entry %d changed from %v to %v", name, k, g[k], out[k])
		}
	}
	if len(dropped) != wantDrop || len(kept) != len(idx)-wantDrop {
		t.Fatalf("%s: dropped %d, kept %d of %d; want %d dropped", name, len(dropped), len(kept), len(idx), wantDrop)
	}
	for _, a := range kept {
		for _, b := range dropped {
			if math.Abs(float64(g[a])) < math.Abs(float64(g[b])) {
				t.Fatalf("%s: kept |%v| at %d below dropped |%v| at %d", name, g[a], a, g[b], b)
			}
		}
	}
}

func TestSparsifyKeepsTheTopShare(t *testing.T) {
	rng := newRNG(7)
	for _, c := range []struct {
		p        float64
		rows, d  int
		dropRow  int // ⌊p·d⌋ by hand
		dropBtch int // ⌊p·rows·d⌋ by hand
	}{
		{0, 3, 10, 0, 0},
		{0.29, 2, 100, 29, 58},
		{0.5, 4, 7, 3, 14},
		{0.9, 5, 20, 18, 90},
		{0.999, 2, 10, 9, 19},
	} {
		g := tensor.New(c.rows, c.d)
		for k := range g.Data {
			g.Data[k] = float32(rng.NormFloat64())
		}
		for _, batch := range []bool{false, true} {
			sp, err := New("sparsify", Params{"sparsify_p": c.p, "sparsify_batch": map[bool]float64{false: 0, true: 1}[batch]})
			if err != nil {
				t.Fatal(err)
			}
			out := &tensor.Matrix{}
			st, err := sp.Protect(&Batch{Grad: g}, out, nil)
			if err != nil {
				t.Fatal(err)
			}
			var all, kept float64
			for k, v := range g.Data {
				all += float64(v) * float64(v)
				if out.Data[k] != 0 {
					kept += float64(v) * float64(v)
				}
			}
			if math.Abs(st["kept_norm2"]-kept/all) > 1e-12 {
				t.Errorf("p=%v batch=%v: kept_norm2 %v, want %v", c.p, batch, st["kept_norm2"], kept/all)
			}
			if batch {
				idx := make([]int, len(g.Data))
				for k := range idx {
					idx[k] = k
				}
				checkTopShare(t, "batch", g.Data, out.Data, idx, c.dropBtch)
				continue
			}
			for i := range c.rows {
				idx := make([]int, c.d)
				for k := range idx {
					idx[k] = i*c.d + k
				}
				checkTopShare(t, "row", g.Data, out.Data, idx, c.dropRow)
			}
		}
	}
}

func TestSparsifyTiesAndErrors(t *testing.T) {
	g := tensor.New(1, 4)
	copy(g.Data, []float32{1, -1, 1, 2})
	sp, _ := New("sparsify", Params{"sparsify_p": 0.5})
	out := &tensor.Matrix{}
	if _, err := sp.Protect(&Batch{Grad: g}, out, nil); err != nil {
		t.Fatal(err)
	}
	// Three entries tie at magnitude 1: the first two are dropped.
	if want := []float32{0, 0, 1, 2}; !slices.Equal(out.Data, want) {
		t.Errorf("ties: got %v, want %v", out.Data, want)
	}
	for _, p := range []Params{{}, {"sparsify_p": 1}, {"sparsify_p": -0.1}, {"sparsify_p": 0.5, "sparsify_batch": 2}} {
		if _, err := New("sparsify", p); err == nil {
			t.Errorf("New(sparsify, %v): no error", p)
		}
	}
}

func BenchmarkSparsify(b *testing.B) {
	g := tensor.New(1024, 128)
	rng := newRNG(1)
	for k := range g.Data {
		g.Data[k] = float32(rng.NormFloat64())
	}
	for _, batch := range []float64{0, 1} {
		sp, _ := New("sparsify", Params{"sparsify_p": 0.9, "sparsify_batch": batch})
		out := &tensor.Matrix{}
		b.Run(map[float64]string{0: "row", 1: "batch"}[batch], func(b *testing.B) {
			for b.Loop() {
				if _, err := sp.Protect(&Batch{Grad: g}, out, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestSparsifyManyTies uses entries from {−2, …, 2}, so that the
// threshold is shared by many entries, and zeros among them.
func TestSparsifyManyTies(t *testing.T) {
	rng := newRNG(3)
	g := tensor.New(6, 33)
	for k := range g.Data {
		g.Data[k] = float32(rng.IntN(5) - 2)
	}
	for _, p := range []float64{0.1, 0.3, 0.5, 0.77} {
		sp, _ := New("sparsify", Params{"sparsify_p": p})
		out := &tensor.Matrix{}
		if _, err := sp.Protect(&Batch{Grad: g}, out, nil); err != nil {
			t.Fatal(err)
		}
		for i := range 6 {
			want := 33 - int(math.Floor(p*33+1e-9))
			// Brute force: the sorted magnitudes of the sent row are the
			// top `want` sorted magnitudes of the clean row, padded with 0.
			clean := magsSorted(g.Data[i*33 : (i+1)*33])
			sent := magsSorted(out.Data[i*33 : (i+1)*33])
			for r := range 33 {
				w := float32(0)
				if r < want {
					w = clean[r]
				}
				if sent[r] != w {
					t.Fatalf("p=%v row %d: sorted sent magnitudes %v, want the top %d of %v", p, i, sent, want, clean)
				}
			}
		}
	}
}

// magsSorted returns the magnitudes of v, largest first.
func magsSorted(v []float32) []float32 {
	m := make([]float32, len(v))
	for k, x := range v {
		m[k] = float32(math.Abs(float64(x)))
	}
	slices.SortFunc(m, func(a, b float32) int { return cmp.Compare(b, a) })
	return m
}
