package step

import (
	"context"
	"math"
	"testing"

	"github.com/splitguard/splitguard/protect"
)

// TestDefencesTable runs the cost table on a tiny case: every registered
// defence has its row, "none" first with ratio 1, and the bytes per step
// match a count by hand of the protobuf messages.
func TestDefencesTable(t *testing.T) {
	rows, err := Defences(context.Background(), DefenceSpec{Batch: 16, Steps: 3, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, r := range rows {
		seen[r.Defence] = true
		if !(r.MSPerStep > 0) || math.IsInf(r.MSPerStep, 0) || !(r.Ratio > 0) {
			t.Errorf("%s: %v ms/step, ratio %v", r.Defence, r.MSPerStep, r.Ratio)
		}
		// The answer to step s (batch s of the first epoch) of the default
		// cut (128 wide) at batch 16: the Tensor is rows (1+1) + cols
		// (1+2: 128 takes two varint bytes) + le_f32 (1+2+16·128·4 = 8195)
		// = 8200 bytes, field 3 of Backward adds 1+2 = 8203; step and
		// batch add 2 bytes each when non-zero; gRPC 5 per message. Steps
		// 0…3: (8208 + 3·8212)/4 = 8211. Sparsify zeroes most of the
		// gradient, which then goes sparse (grpcnet), in fewer bytes.
		if r.Defence == "sparsify" {
			if r.BytesBackward >= 8211 {
				t.Errorf("%s: %v bytes active→passive per step, want fewer than the dense 8211", r.Defence, r.BytesBackward)
			}
		} else if r.BytesBackward != 8211 {
			t.Errorf("%s: %v bytes active→passive per step, want 8211", r.Defence, r.BytesBackward)
		}
		// The embedding (after a ReLU: many values are +0) goes dense or
		// sparse, whichever is smaller: at most the dense values, 16 IDs
		// of at most 10 varint bytes, and 64 bytes of fields and headers.
		if r.BytesForward <= 0 || r.BytesForward > 16*128*4+16*10+64 {
			t.Errorf("%s: %v bytes passive→active per step, want at most the dense message's %d", r.Defence, r.BytesForward, 16*128*4+16*10+64)
		}
	}
	if rows[0].Defence != "none" || rows[0].Ratio != 1 {
		t.Errorf("first row %s with ratio %v, want none with 1", rows[0].Defence, rows[0].Ratio)
	}
	for _, s := range protect.Specs() {
		if !seen[s.Name] {
			t.Errorf("defence %s has no row", s.Name)
		}
	}
	if len(rows) != len(protect.Specs()) {
		t.Errorf("%d rows for %d registered defences", len(rows), len(protect.Specs()))
	}
}

// TestBenchParams checks the benchmark's settings: the first parameter
// (turning an add-on on) at a value its range accepts, no parameters for
// a protection with a usable default.
func TestBenchParams(t *testing.T) {
	tests := []struct {
		name string
		want protect.Params
	}{
		{"none", nil},
		{"grad_avg", nil}, // the whole batch by default
		{"iso", protect.Params{"iso_t": 1}},
		{"sparsify", protect.Params{"sparsify_p": 0.5}}, // 1 and 0+1 are outside [0, 1)
		{"dsgd", protect.Params{"dsgd_bins": 3}},        // 1 is below its minimum 2
		{"mid", protect.Params{"mid_lambda": 1}},
	}
	for _, tc := range tests {
		s, ok := protect.Lookup(tc.name)
		if !ok {
			t.Fatalf("%s is not registered", tc.name)
		}
		got := protect.BenchParams(s)
		if len(got) != len(tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
			continue
		}
		for k, v := range tc.want {
			if got[k] != v {
				t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
			}
		}
	}
}
