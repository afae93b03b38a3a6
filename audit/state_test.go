package audit

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/splitguard/splitguard/metrics"
	"github.com/splitguard/splitguard/tensor"
)

func stateTestBatch(i int) *Batch {
	r := rand.New(rand.NewPCG(uint64(i), 11))
	n, d := 16, 3
	g, e := tensor.New(n, d), tensor.New(n, d)
	labels := make([]uint8, n)
	ids := make([]uint64, n)
	for k := range n {
		ids[k] = uint64(i*n + k)
		if r.IntN(3) == 0 && i != 1 {
			labels[k] = 1
		}
		for j := range d {
			g.Data[k*d+j] = float32(r.NormFloat64()) * (1 + float32(labels[k]))
			e.Data[k*d+j] = float32(r.NormFloat64())
		}
	}
	return &Batch{Step: int64(i), IDs: ids, Labels: labels, Layers: []string{"cut"},
		Grads: []*tensor.Matrix{g}, Outputs: []*tensor.Matrix{e},
		Clean: func() ([]*tensor.Matrix, error) { return []*tensor.Matrix{g}, nil }}
}

// TestStateResume checks that an auditor restored from a checkpoint makes
// the same choices and summaries as one that kept going.
func TestStateResume(t *testing.T) {
	names := []string{"norm", "cosine", "hint3_distance", "spectral"}
	ref, err := New(names, true, 9)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := New(names, true, 9)
	const total, cut = 6, 3
	var want []map[string]float64
	for i := range total {
		res, err := ref.Observe(stateTestBatch(i))
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, flat(res))
		if i < cut {
			if _, err := a.Observe(stateTestBatch(i)); err != nil {
				t.Fatal(err)
			}
		}
	}
	st, err := a.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := New(names, true, 9)
	if err := b.UnmarshalBinary(st); err != nil {
		t.Fatal(err)
	}
	for i := cut; i < total; i++ {
		res, err := b.Observe(stateTestBatch(i))
		if err != nil {
			t.Fatal(err)
		}
		if got := flat(res); !reflect.DeepEqual(got, want[i]) {
			t.Fatalf("batch %d: %v, want %v", i, got, want[i])
		}
	}
	if !reflect.DeepEqual(b.Summary(), ref.Summary()) {
		t.Errorf("summaries differ:\n%v\n%v", b.Summary(), ref.Summary())
	}
	// The compositions survive the checkpoint, so the chance floor is the
	// same to the bit; the hint series scores fewer positives than norm.
	for _, k := range []string{"norm/cut", "hint3_distance/cut"} {
		got, want := b.Summary()[k].ChanceQ95Abs, ref.Summary()[k].ChanceQ95Abs
		if math.IsNaN(want) || got != want {
			t.Errorf("%s: chance %v after the restore, %v without", k, got, want)
		}
	}
	for _, at := range []string{"norm", "hint3_distance"} {
		if got, want := b.Leak().Compositions(at, "cut"), ref.Leak().Compositions(at, "cut"); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: compositions %v after the restore, %v without", at, got, want)
		}
	}
	var wantNorm, wantHint []metrics.Composition
	for i := range total {
		pos := 0
		for _, y := range stateTestBatch(i).Labels {
			pos += int(y)
		}
		if pos == 0 {
			continue
		}
		wantNorm = append(wantNorm, metrics.Composition{Pos: pos, Neg: 16 - pos})
		if pos > 3 {
			wantHint = append(wantHint, metrics.Composition{Pos: pos - 3, Neg: 16 - pos})
		}
	}
	if got := ref.Leak().Compositions("norm", "cut"); !reflect.DeepEqual(got, wantNorm) {
		t.Errorf("norm compositions %v, want %v", got, wantNorm)
	}
	if got := ref.Leak().Compositions("hint3_distance", "cut"); !reflect.DeepEqual(got, wantHint) {
		t.Errorf("hint3 compositions %v, want %v", got, wantHint)
	}
	if err := b.UnmarshalBinary(st); err == nil {
		t.Error("restored into a used auditor")
	}
	c, _ := New(names, true, 9)
	if err := c.UnmarshalBinary(st[:len(st)-3]); err == nil {
		t.Error("truncated state accepted")
	}
	m, _ := New([]string{"memory_norm"}, true, 9)
	if _, err := m.MarshalBinary(); err == nil {
		t.Error("memory attack state saved")
	}
}

func flat(m map[string]*float64) map[string]float64 {
	out := map[string]float64{}
	for k, v := range m {
		if v == nil {
			out[k] = -1
		} else {
			out[k] = *v
		}
	}
	return out
}

// TestStateRefusesBadState checks that a v1 state (no compositions) is
// refused by name, and that corrupt series are refused.
func TestStateRefusesBadState(t *testing.T) {
	a, _ := New([]string{"norm"}, true, 9)
	if _, err := a.Observe(stateTestBatch(0)); err != nil {
		t.Fatal(err)
	}
	st, err := a.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	rs, _ := rand.NewPCG(9, streamAudit).MarshalBinary()
	// state builds an encoding with one series "norm/cut" of one batch.
	state := func(tag string, auc float64, pos, neg uint32) []byte {
		b := appendStr(nil, tag)
		b = appendStr(b, string(rs))
		b = binary.LittleEndian.AppendUint32(b, 1)
		b = appendStr(b, "norm/cut")
		b = binary.LittleEndian.AppendUint32(b, 0) // skipped
		b = binary.LittleEndian.AppendUint32(b, 1) // AUCs
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(auc))
		b = binary.LittleEndian.AppendUint32(b, pos)
		return binary.LittleEndian.AppendUint32(b, neg)
	}
	fresh := func() *Auditor { x, _ := New([]string{"norm"}, true, 9); return x }
	if err := fresh().UnmarshalBinary(state(stateTag, 0.7, 4, 12)); err != nil {
		t.Fatalf("valid hand-built state refused: %v", err)
	}
	// A v1 state: the same bytes as a v2 one up to the tag, whose length
	// is the same.
	v1 := slices.Clone(st)
	copy(v1[4:], stateTagV1)
	err = fresh().UnmarshalBinary(v1)
	if err == nil || !strings.Contains(err.Error(), "splitguard/audit/v1") || !strings.Contains(err.Error(), "splitguard/audit/v2") {
		t.Errorf("v1 state: %v, want an error naming both versions", err)
	}
	for _, bad := range []struct {
		name string
		b    []byte
	}{
		{"other tag", state("splitguard/audit/v9", 0.7, 4, 12)},
		{"no positives", state(stateTag, 0.7, 0, 12)},
		{"no negatives", state(stateTag, 0.7, 4, 0)},
		{"NaN AUC", state(stateTag, math.NaN(), 4, 12)},
		{"AUC above 1", state(stateTag, 1.5, 4, 12)},
		{"truncated counts", state(stateTag, 0.7, 4, 12)[:len(state(stateTag, 0.7, 4, 12))-4]},
		{"trailing bytes", append(state(stateTag, 0.7, 4, 12), 0)},
	} {
		if err := fresh().UnmarshalBinary(bad.b); err == nil {
			t.Errorf("%s: accepted", bad.name)
		}
	}
}

// TestStateBoundsSkippedSteps: a state whose series claims 4 billion
// skipped steps in 8 bytes is refused at once (it used to loop over
// every one), and a series longer than the checkpoint's step is refused
// by UnmarshalBinaryAt.
func TestStateBoundsSkippedSteps(t *testing.T) {
	rs, _ := rand.NewPCG(9, streamAudit).MarshalBinary()
	state := func(skipped, aucs uint32) []byte {
		b := appendStr(nil, stateTag)
		b = appendStr(b, string(rs))
		b = binary.LittleEndian.AppendUint32(b, 1)
		b = appendStr(b, "norm/cut")
		b = binary.LittleEndian.AppendUint32(b, skipped)
		b = binary.LittleEndian.AppendUint32(b, aucs)
		for range aucs {
			b = binary.LittleEndian.AppendUint64(b, math.Float64bits(0.5))
			b = binary.LittleEndian.AppendUint32(b, 3)
			b = binary.LittleEndian.AppendUint32(b, 5)
		}
		return b
	}
	fresh := func() *Auditor { x, _ := New([]string{"norm"}, true, 9); return x }
	if err := fresh().UnmarshalBinary(state(math.MaxUint32, 0)); err == nil || !strings.Contains(err.Error(), "more than the 67108864 steps") {
		t.Fatalf("4e9 skipped steps: %v", err)
	}
	if err := fresh().UnmarshalBinaryAt(state(2, 2), 4); err != nil {
		t.Fatalf("4 batches at step 4: %v", err)
	}
	if err := fresh().UnmarshalBinaryAt(state(2, 2), 3); err == nil || !strings.Contains(err.Error(), "holds 4 batches, more than the 3 steps") {
		t.Fatalf("4 batches at step 3: %v", err)
	}
}
