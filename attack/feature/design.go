package feature

import (
	"fmt"
	"slices"

	"github.com/splitguard/splitguard/data"
	"github.com/splitguard/splitguard/tensor"
)

// OwnLevels is how many of the most frequent values (among the auxiliary
// rows) of each of the active's own categorical columns a decoder reads,
// one indicator each; other values read as all zeros.
const OwnLevels = 8

// TargetClasses is how many of the most frequent values (among the
// auxiliary rows) of a passive categorical column a decoder can guess.
const TargetClasses = 32

// topValues returns up to k of the most frequent ids of categorical
// column j of x, most frequent first (ties: the smaller id first).
func topValues(x *data.Features, j, k int) []int32 {
	count := map[int32]int{}
	for r := 0; r < x.Rows; r++ {
		count[x.Cat[r*x.NumCat+j]]++
	}
	ids := make([]int32, 0, len(count))
	for id := range count {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b int32) int {
		if count[a] != count[b] {
			return count[b] - count[a]
		}
		return int(a - b)
	})
	return ids[:min(k, len(ids))]
}

// levelsOf returns topValues(x, j, k) of every categorical column of x
// (nil for a nil x).
func levelsOf(x *data.Features, k int) [][]int32 {
	if x == nil {
		return nil
	}
	out := make([][]int32, x.NumCat)
	for j := range out {
		out[j] = topValues(x, j, k)
	}
	return out
}

// width is the number of design columns of an embedding of width d and
// own columns with the given levels and dense count.
func width(d int, levels [][]int32, dense int) int {
	p := d + dense
	for _, l := range levels {
		p += len(l)
	}
	return p
}

// design returns the decoder's input rows (row-major, rows×p, float64):
// the embedding's columns, then own's dense columns, then one indicator
// per level of each of own's categorical columns. embed or own may be
// nil; rows is their common row count.
func design(embed *tensor.Matrix, own *data.Features, levels [][]int32, rows int) ([]float64, int, error) {
	d, dense := 0, 0
	if embed != nil {
		if embed.Rows != rows {
			return nil, 0, fmt.Errorf("feature: %d embedding rows for %d rows", embed.Rows, rows)
		}
		d = embed.Cols
	}
	if own != nil {
		if own.Rows != rows {
			return nil, 0, fmt.Errorf("feature: %d rows of own columns for %d rows", own.Rows, rows)
		}
		dense = own.NumDense
	}
	p := width(d, levels, dense)
	x := make([]float64, rows*p)
	for r := 0; r < rows; r++ {
		row := x[r*p : (r+1)*p]
		for c := 0; c < d; c++ {
			row[c] = float64(embed.Data[r*embed.Cols+c])
		}
		if own == nil {
			continue
		}
		for c := 0; c < dense; c++ {
			row[d+c] = float64(own.Dense[r*own.NumDense+c])
		}
		off := d + dense
		for j, l := range levels {
			if k := slices.Index(l, own.Cat[r*own.NumCat+j]); k >= 0 {
				row[off+k] = 1
			}
			off += len(l)
		}
	}
	return x, p, nil
}

// targets returns the decoder's targets of the auxiliary rows' passive
// features (row-major, rows×m): the dense columns, then one indicator
// per class of each categorical column (classes: its TargetClasses most
// frequent values).
func targets(truth *data.Features, classes [][]int32) ([]float64, int) {
	m := width(0, classes, truth.NumDense)
	y := make([]float64, truth.Rows*m)
	for r := 0; r < truth.Rows; r++ {
		row := y[r*m : (r+1)*m]
		for c := 0; c < truth.NumDense; c++ {
			row[c] = float64(truth.Dense[r*truth.NumDense+c])
		}
		off := truth.NumDense
		for j, l := range classes {
			if k := slices.Index(l, truth.Cat[r*truth.NumCat+j]); k >= 0 {
				row[off+k] = 1
			}
			off += len(l)
		}
	}
	return y, m
}

// decode turns predicted targets (rows×m, as [targets] lays them out)
// into a guess: the dense columns as predicted, each categorical column
// the class of the largest prediction (the first of ties).
func decode(pred []float64, rows, m, numDense int, classes [][]int32) *Guess {
	g := &Guess{Rows: rows, Dense: make([]float32, rows*numDense), Cat: make([]int32, rows*len(classes))}
	for r := 0; r < rows; r++ {
		row := pred[r*m : (r+1)*m]
		for c := 0; c < numDense; c++ {
			g.Dense[r*numDense+c] = float32(row[c])
		}
		off := numDense
		for j, l := range classes {
			best := 0
			for k := 1; k < len(l); k++ {
				if row[off+k] > row[off+best] {
					best = k
				}
			}
			if len(l) > 0 {
				g.Cat[r*len(classes)+j] = l[best]
			}
			off += len(l)
		}
	}
	return g
}

// problem is what both decoders fit and predict: the auxiliary rows'
// design matrix xa (n×p), the evaluated rows' xe (rows×p), the auxiliary
// rows' targets y (n×m) and the categorical classes they encode.
type problem struct {
	xa, y, xe []float64
	n, p, m   int
	rows      int
	classes   [][]int32
}

// newProblem builds the design matrices of in's auxiliary and evaluated
// rows (the embedding, and the active's own columns as indicators of
// their levels among the auxiliary rows) and the auxiliary targets.
func newProblem(in *Input) (*problem, error) {
	n := in.AuxTruth.Rows
	levels := levelsOf(in.AuxOwn, OwnLevels)
	xa, p, err := design(in.AuxEmbed, in.AuxOwn, levels, n)
	if err != nil {
		return nil, fmt.Errorf("auxiliary rows: %w", err)
	}
	rows := evalRows(in)
	xe, _, err := design(in.EvalEmbed, in.EvalOwn, levels, rows)
	if err != nil {
		return nil, fmt.Errorf("evaluated rows: %w", err)
	}
	classes := levelsOf(in.AuxTruth, TargetClasses)
	y, m := targets(in.AuxTruth, classes)
	return &problem{xa: xa, y: y, xe: xe, n: n, p: p, m: m, rows: rows, classes: classes}, nil
}
