package integrity

import (
	"slices"
	"testing"

	"github.com/splitguard/splitguard/data"
)

// TestGradientReplacementInBatch follows VFLAIR's pairing on hand-built
// batches of grFeatures' rows (row of ID i: (i−9, 10(i−9)); the trigger
// sets the last column to −7). Known rows 10 and 11, three poisoned rows
// (a share of 0.5 of six). A batch holding both known rows, the three
// poisoned rows and the clean row: each known row carries a different
// poisoned row's features with the trigger, those two poisoned rows carry
// the trigger, the third poisoned row and the clean row are untouched;
// the two paired poisoned rows' gradients become exactly γ = 4 times
// their own known row's gradient of this batch, every other row keeps
// its own. A later batch with the unpaired poisoned row and no known row:
// nothing changes (no gradient is carried over). A batch with a known
// row and no poisoned row: the known row carries one of the poisoned
// rows' triggered features, and every gradient is left as received.
// Before From nothing changes.
func TestGradientReplacementInBatch(t *testing.T) {
	ids, f := grFeatures()
	bd, err := NewBackdoor("gradient_replacement", BackdoorConfig{Known: []uint64{10, 11}, TrainIDs: ids, Train: f,
		From: 1, Poison: 0.5, Amplify: 4, TriggerValue: -7, Seed: 5})
	if err != nil {
		t.Fatal(err)
	}
	gr := bd.(*gradientReplacement)
	var poisoned []uint64
	var clean uint64
	for _, id := range ids[2:] {
		if gr.Poisoned(id) {
			poisoned = append(poisoned, id)
		} else {
			clean = id
		}
	}
	if len(poisoned) != 3 || clean == 0 {
		t.Fatalf("poisoned rows %v, want three of 12…15 (0.5 of 6, none known)", poisoned)
	}
	batchOf := func(rowIDs []uint64) *data.Batch { return grBatch(f, rowIDs) }
	row := func(id uint64) []float32 { v := float32(id - 9); return []float32{v, 10 * v} }
	triggered := func(id uint64) []float32 { return []float32{float32(id - 9), -7} }

	// Before From: nothing changes.
	batch := []uint64{10, poisoned[0], 11, poisoned[1], poisoned[2], clean}
	b := batchOf(batch)
	want := slices.Clone(b.Dense.Data)
	if err := bd.Features(0, batch, b); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(b.Dense.Data, want) {
		t.Errorf("before From: features %v, want %v", b.Dense.Data, want)
	}

	b = batchOf(batch)
	if err := bd.Features(1, batch, b); err != nil {
		t.Fatal(err)
	}
	// Which poisoned row each known row carries, read off its first column.
	partner := map[int]int{} // place of a known row → place of its poisoned row
	for _, rt := range []int{0, 2} {
		j := uint64(b.Dense.Data[2*rt]) + 9
		rj := slices.Index(batch, j)
		if rj < 0 || !gr.Poisoned(j) {
			t.Fatalf("known row %d carries %v, not a poisoned row of the batch", batch[rt], b.Dense.Data[2*rt:2*rt+2])
		}
		if !slices.Equal(b.Dense.Data[2*rt:2*rt+2], triggered(j)) {
			t.Errorf("known row %d carries %v, want row %d with the trigger %v", batch[rt], b.Dense.Data[2*rt:2*rt+2], j, triggered(j))
		}
		partner[rt] = rj
	}
	if partner[0] == partner[2] {
		t.Fatalf("both known rows paired with row %d", batch[partner[0]])
	}
	var unpaired uint64
	for r, id := range batch {
		got := b.Dense.Data[2*r : 2*r+2]
		switch {
		case r == partner[0] || r == partner[2]:
			if !slices.Equal(got, triggered(id)) {
				t.Errorf("paired poisoned row %d: %v, want the trigger %v", id, got, triggered(id))
			}
		case r == 0 || r == 2:
		default:
			if !slices.Equal(got, row(id)) {
				t.Errorf("row %d: %v, want it untouched %v", id, got, row(id))
			}
			if id != clean {
				unpaired = id
			}
		}
	}
	g := mat(6, 2, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12)
	got, err := bd.Gradient(1, batch, g)
	if err != nil {
		t.Fatal(err)
	}
	wantG := slices.Clone(g.Data)
	for rt, rj := range partner {
		wantG[2*rj], wantG[2*rj+1] = 4*g.Data[2*rt], 4*g.Data[2*rt+1]
	}
	if !slices.Equal(got.Data, wantG) {
		t.Errorf("gradient %v, want %v (poisoned rows at %v: 4 × their known row's)", got.Data, wantG, partner)
	}
	if w := []float32{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}; !slices.Equal(g.Data, w) {
		t.Errorf("the received gradient was changed: %v", g.Data)
	}

	// The unpaired poisoned row in a batch without a known row: honest.
	batch = []uint64{clean, unpaired}
	b = batchOf(batch)
	if err := bd.Features(2, batch, b); err != nil {
		t.Fatal(err)
	}
	if w := append(row(clean), row(unpaired)...); !slices.Equal(b.Dense.Data, w) {
		t.Errorf("no known row: features %v, want %v", b.Dense.Data, w)
	}
	got, err = bd.Gradient(2, batch, mat(2, 2, 9, 8, 7, 6))
	if err != nil {
		t.Fatal(err)
	}
	if w := []float32{9, 8, 7, 6}; !slices.Equal(got.Data, w) {
		t.Errorf("no known row: gradient %v, want it as received %v", got.Data, w)
	}

	// A known row without a poisoned row in its batch.
	batch = []uint64{11, clean}
	b = batchOf(batch)
	if err := bd.Features(3, batch, b); err != nil {
		t.Fatal(err)
	}
	j := uint64(b.Dense.Data[0]) + 9
	if !slices.Contains(poisoned, j) || !slices.Equal(b.Dense.Data, append(triggered(j), row(clean)...)) {
		t.Errorf("no poisoned row: features %v, want a poisoned row's with the trigger, then %v", b.Dense.Data, row(clean))
	}
	got, err = bd.Gradient(3, batch, mat(2, 2, 1, 1, 2, 2))
	if err != nil {
		t.Fatal(err)
	}
	if w := []float32{1, 1, 2, 2}; !slices.Equal(got.Data, w) {
		t.Errorf("no poisoned row: gradient %v, want it as received %v", got.Data, w)
	}
}
