package data

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"testing"
)

// exactAUC is the Mann–Whitney AUC with ties counted as ½, by brute-force
// ranking.
func exactAUC(score []float64, y []uint8) float64 {
	idx := make([]int, len(score))
	for i := range idx {
		idx[i] = i
	}
	sort.Slice(idx, func(a, b int) bool { return score[idx[a]] < score[idx[b]] })
	var rankSum, np float64
	for i := 0; i < len(idx); {
		j := i
		for j < len(idx) && score[idx[j]] == score[idx[i]] {
			j++
		}
		r := float64(i+j+1) / 2
		for k := i; k < j; k++ {
			if y[idx[k]] == 1 {
				rankSum += r
				np++
			}
		}
		i = j
	}
	nn := float64(len(y)) - np
	return (rankSum - np*(np+1)/2) / (np * nn)
}

func TestExactAUC(t *testing.T) {
	// Hand-derived: pairs (pos, neg) = (2,1) win, (2,3) lose, (3,1) win, (3,3) tie → 2.5/4.
	if got := exactAUC([]float64{1, 2, 3, 3}, []uint8{0, 1, 1, 0}); got != 0.625 {
		t.Fatalf("exactAUC = %v, want 0.625", got)
	}
}

func TestSynthStatistics(t *testing.T) {
	n := 100000
	if testing.Short() {
		n = 20000
	}
	for _, pr := range []float64{0.25, 0.1} {
		g, err := newSynth(pr, 11)
		if err != nil {
			t.Fatal(err)
		}
		g.scored = true
		var r synthRow
		score := make([]float64, n)
		y := make([]uint8, n)
		pos, negs, c9zero := 0, 0, 0
		na := make([]int, criteoCat)
		intNA := make([]int, criteoDense)
		for i := range n {
			g.next(&r)
			score[i], y[i] = r.score, r.label
			pos += int(r.label)
			for j, v := range r.cats {
				if v < 0 {
					na[j]++
				} else if v >= int64(synthCats[j].card) {
					t.Fatalf("column C%d value %d ≥ cardinality %d", j+1, v, synthCats[j].card)
				}
			}
			for j, v := range r.ints {
				if v < 0 {
					intNA[j]++
				}
			}
			if r.label == 0 {
				negs++
				if r.cats[8] == 0 {
					c9zero++
				}
			}
		}
		within := func(what string, got int, p float64, m int) {
			sd := math.Sqrt(float64(m) * p * (1 - p))
			if math.Abs(float64(got)-p*float64(m)) > 5*sd {
				t.Errorf("pos rate %v: %s: %d of %d, want %.1f ± %.1f", pr, what, got, m, p*float64(m), 5*sd)
			}
		}
		within("positives", pos, pr, n)
		// C9 among negatives follows Zipf(1.5) over 3 values: P(0) = 1/(1 + 2^-1.5 + 3^-1.5).
		within("C9 = first value among negatives", c9zero, 1/(1+math.Pow(2, -1.5)+math.Pow(3, -1.5)), negs)
		within("C22 NA", na[21], 0.76, n)
		within("I12 NA", intNA[11], 0.77*(1-pr)+0.77*pr, n)
		// The label is learnable from the features (Bayes AUC of the
		// oracle score), and not trivially so.
		if auc := exactAUC(score, y); auc < 0.8 || auc > 0.9 {
			t.Errorf("pos rate %v: oracle AUC %.3f outside [0.8, 0.9]", pr, auc)
		}
		// Positive-class ambiguity: a share synthAmbiguous of positives
		// is drawn like negatives, so at least about half of that share
		// scores below the negatives' median.
		var negScores []float64
		for i, v := range y {
			if v == 0 {
				negScores = append(negScores, score[i])
			}
		}
		slices.Sort(negScores)
		med, below := negScores[len(negScores)/2], 0
		for i, v := range y {
			if v == 1 && score[i] < med {
				below++
			}
		}
		if share := float64(below) / float64(pos); share < 0.9*synthAmbiguous/2 {
			t.Errorf("pos rate %v: %.3f of positives below the negatives' median, want ≥ %.3f", pr, share, 0.9*synthAmbiguous/2)
		}
	}
}

func TestSynthDeterministicAndPrefixStable(t *testing.T) {
	var a, b, c bytes.Buffer
	if err := WriteSynth(&a, 500, 0.25, 5); err != nil {
		t.Fatal(err)
	}
	if err := WriteSynth(&b, 500, 0.25, 5); err != nil {
		t.Fatal(err)
	}
	if err := WriteSynth(&c, 200, 0.25, 5); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Error("same seed, different bytes")
	}
	lines := bytes.SplitAfter(a.Bytes(), []byte("\n"))
	if len(lines) != 501 || !bytes.Equal(bytes.Join(lines[:200], nil), c.Bytes()) {
		t.Error("the first 200 rows depend on the row count")
	}
	for i, l := range lines[:500] {
		if f := bytes.Split(bytes.TrimSuffix(l, []byte("\n")), []byte("\t")); len(f) != 40 {
			t.Fatalf("row %d has %d fields", i, len(f))
		}
	}
	var d bytes.Buffer
	WriteSynth(&d, 500, 0.25, 6)
	if bytes.Equal(a.Bytes(), d.Bytes()) {
		t.Error("seeds 5 and 6 give the same file")
	}
	for _, bad := range []float64{0, 1, -0.1, math.NaN()} {
		if err := WriteSynth(&d, 1, bad, 1); err == nil {
			t.Errorf("positive rate %v accepted", bad)
		}
	}
}

func TestGenerateMatchesFile(t *testing.T) {
	const rows, pr, seed = 3000, 0.25, 77
	p := filepath.Join(t.TempDir(), "synth.txt")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteSynth(f, rows, pr, seed); err != nil {
		t.Fatal(err)
	}
	f.Close()
	o := Options{Seed: 3, Sample: 0.8}
	fromFile, err := Load(p, o)
	if err != nil {
		t.Fatal(err)
	}
	mem, err := Generate(rows, pr, seed, o)
	if err != nil {
		t.Fatal(err)
	}
	for _, pair := range [][2]*Dataset{{fromFile.Train, mem.Train}, {fromFile.Test, mem.Test}} {
		a, b := pair[0], pair[1]
		if !slices.Equal(a.IDs, b.IDs) || !slices.Equal(a.Labels, b.Labels) || !slices.Equal(a.X.Cat, b.X.Cat) ||
			!slices.Equal(a.X.Dense, b.X.Dense) || !slices.Equal(a.X.Cardinality, b.X.Cardinality) {
			t.Fatal("Generate differs from loading the written file")
		}
	}
	if mem.Info.RowsRead != rows || mem.Train.X.Validate() != nil {
		t.Errorf("generated %d rows", mem.Info.RowsRead)
	}
	if _, err := Generate(10, 0.25, 1, Options{Format: FormatAvazu}); err == nil {
		t.Error("Generate accepted the avazu format")
	}
}
