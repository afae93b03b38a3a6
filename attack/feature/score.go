package feature

import (
	"fmt"
	"math"

	"github.com/splitguard/splitguard/data"
)

// Column is the reconstruction quality of one passive column over the
// evaluated rows. For a numeric column Score is R² = 1 − MSE/variance
// (the prior, which predicts the evaluated rows' mean, scores 0; Prior is
// 0); for a categorical column Score is the top-1 accuracy and Prior the
// share of the evaluated rows' most frequent value (the majority guess).
// Own is the same attack's score with the active's own columns alone, no
// embedding (the prior's when the active has no columns), and Emb, when
// the active has columns (Result.HasEmb), its score with the embedding
// alone: what a passive party, which cannot read the active's columns,
// measures by itself.
type Column struct {
	Name        string
	Categorical bool
	Score, Own  float64
	Emb         float64
	Prior       float64
}

// Result is one attack's reconstruction quality at one evaluation.
type Result struct {
	Attack  string
	Columns []Column
	// HasEmb says the columns' Emb is set (the active has own columns).
	HasEmb bool
	// Skipped names the numeric columns constant over the evaluated rows,
	// whose R² is undefined.
	Skipped []string
}

// R2 returns 1 − Σ(y−ŷ)²/Σ(y−ȳ)² over the rows, ȳ the mean of y, and
// false when y is constant (R² undefined). stride and col pick the
// column of row-major y and yhat.
func R2(y, yhat []float32, stride, col int) (float64, bool) {
	rows := len(y) / stride
	if rows == 0 {
		return 0, false
	}
	var mean float64
	for r := 0; r < rows; r++ {
		mean += float64(y[r*stride+col])
	}
	mean /= float64(rows)
	var sse, sst float64
	for r := 0; r < rows; r++ {
		v := float64(y[r*stride+col])
		e := v - float64(yhat[r*stride+col])
		sse += e * e
		sst += (v - mean) * (v - mean)
	}
	if sst <= 1e-12*float64(rows)*math.Max(1, mean*mean) {
		return 0, false
	}
	return 1 - sse/sst, true
}

// Accuracy returns the share of rows where column col of guess equals
// that of truth, and the share of the column's most frequent value.
func Accuracy(truth, guess []int32, stride, col int) (acc, majority float64) {
	rows := len(truth) / stride
	if rows == 0 {
		return 0, 0
	}
	right := 0
	count := map[int32]int{}
	top := 0
	for r := 0; r < rows; r++ {
		v := truth[r*stride+col]
		if guess[r*stride+col] == v {
			right++
		}
		count[v]++
		top = max(top, count[v])
	}
	return float64(right) / float64(rows), float64(top) / float64(rows)
}

// Run runs attack a on in twice — with the embedding (and in's own
// columns), then with the own columns alone — and scores both guesses
// against truth, the passive features of the evaluated rows.
func Run(a Attack, in *Input, truth *data.Features) (*Result, error) {
	if in.EvalEmbed == nil || in.AuxEmbed == nil {
		return nil, fmt.Errorf("feature: attack %s: no embeddings", a.Name())
	}
	if in.EvalEmbed.Rows != truth.Rows {
		return nil, fmt.Errorf("feature: attack %s: %d evaluated embeddings for %d rows of features", a.Name(), in.EvalEmbed.Rows, truth.Rows)
	}
	full, err := a.Reconstruct(in)
	if err != nil {
		return nil, fmt.Errorf("feature: attack %s: %w", a.Name(), err)
	}
	ownIn := *in
	ownIn.AuxEmbed, ownIn.EvalEmbed = nil, nil
	var own, emb *Guess
	if in.EvalOwn != nil {
		if own, err = a.Reconstruct(&ownIn); err != nil {
			return nil, fmt.Errorf("feature: attack %s on the own columns: %w", a.Name(), err)
		}
		embIn := *in
		embIn.AuxOwn, embIn.EvalOwn = nil, nil
		if emb, err = a.Reconstruct(&embIn); err != nil {
			return nil, fmt.Errorf("feature: attack %s on the embedding alone: %w", a.Name(), err)
		}
	}
	if err := checkGuess(full, truth); err != nil {
		return nil, fmt.Errorf("feature: attack %s: %w", a.Name(), err)
	}
	res := &Result{Attack: a.Name(), HasEmb: emb != nil}
	for j, name := range truth.CatNames {
		acc, maj := Accuracy(truth.Cat, full.Cat, truth.NumCat, j)
		c := Column{Name: name, Categorical: true, Score: acc, Own: maj, Prior: maj}
		if own != nil {
			c.Own, _ = Accuracy(truth.Cat, own.Cat, truth.NumCat, j)
			c.Emb, _ = Accuracy(truth.Cat, emb.Cat, truth.NumCat, j)
		}
		res.Columns = append(res.Columns, c)
	}
	for j, name := range truth.DenseNames {
		r2, ok := R2(truth.Dense, full.Dense, truth.NumDense, j)
		if !ok {
			res.Skipped = append(res.Skipped, name)
			continue
		}
		c := Column{Name: name, Score: r2}
		if own != nil {
			c.Own, _ = R2(truth.Dense, own.Dense, truth.NumDense, j)
			c.Emb, _ = R2(truth.Dense, emb.Dense, truth.NumDense, j)
		}
		res.Columns = append(res.Columns, c)
	}
	return res, nil
}

// checkGuess checks that g has truth's shape and finite values.
func checkGuess(g *Guess, truth *data.Features) error {
	if g.Rows != truth.Rows || len(g.Dense) != truth.Rows*truth.NumDense || len(g.Cat) != truth.Rows*truth.NumCat {
		return fmt.Errorf("a guess of %d rows (%d dense, %d categorical values) for %d rows of %d dense and %d categorical columns",
			g.Rows, len(g.Dense), len(g.Cat), truth.Rows, truth.NumDense, truth.NumCat)
	}
	for i, v := range g.Dense {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return fmt.Errorf("a non-finite guess %g at row %d", v, i/max(truth.NumDense, 1))
		}
	}
	return nil
}

// Means returns the mean Score, Own, Prior and Emb over the numeric
// columns (ok false without one) and over the categorical columns.
func (r *Result) Means() (num, cat [4]float64, numOK, catOK bool) {
	var nn, nc int
	for _, c := range r.Columns {
		v := [4]float64{c.Score, c.Own, c.Prior, c.Emb}
		if c.Categorical {
			for i := range cat {
				cat[i] += v[i]
			}
			nc++
		} else {
			for i := range num {
				num[i] += v[i]
			}
			nn++
		}
	}
	for i := range num {
		num[i] /= float64(max(nn, 1))
		cat[i] /= float64(max(nc, 1))
	}
	return num, cat, nn > 0, nc > 0
}

// Flatten writes r's figures into dst (allocated when nil) for
// eval.jsonl: per column "ATTACK/r2/COL" and "ATTACK/r2_own/COL"
// (numeric), "ATTACK/acc/COL", "ATTACK/acc_own/COL" and
// "ATTACK/acc_prior/COL" (categorical); and the means over columns,
// "ATTACK/r2_mean", "ATTACK/r2_own_mean", "ATTACK/acc_mean",
// "ATTACK/acc_own_mean", "ATTACK/acc_prior_mean"; with HasEmb also the
// embedding-alone figures "ATTACK/r2_emb/COL", "ATTACK/acc_emb/COL",
// "ATTACK/r2_emb_mean" and "ATTACK/acc_emb_mean". "ATTACK/r2_mean" is the
// run's summary figure.
func (r *Result) Flatten(dst map[string]float64) map[string]float64 {
	if dst == nil {
		dst = make(map[string]float64, 3*len(r.Columns)+5)
	}
	a := r.Attack
	for _, c := range r.Columns {
		if c.Categorical {
			dst[a+"/acc/"+c.Name] = c.Score
			dst[a+"/acc_own/"+c.Name] = c.Own
			dst[a+"/acc_prior/"+c.Name] = c.Prior
			if r.HasEmb {
				dst[a+"/acc_emb/"+c.Name] = c.Emb
			}
		} else {
			dst[a+"/r2/"+c.Name] = c.Score
			dst[a+"/r2_own/"+c.Name] = c.Own
			if r.HasEmb {
				dst[a+"/r2_emb/"+c.Name] = c.Emb
			}
		}
	}
	num, cat, numOK, catOK := r.Means()
	if numOK {
		dst[a+"/r2_mean"], dst[a+"/r2_own_mean"] = num[0], num[1]
		if r.HasEmb {
			dst[a+"/r2_emb_mean"] = num[3]
		}
	}
	if catOK {
		dst[a+"/acc_mean"], dst[a+"/acc_own_mean"], dst[a+"/acc_prior_mean"] = cat[0], cat[1], cat[2]
		if r.HasEmb {
			dst[a+"/acc_emb_mean"] = cat[3]
		}
	}
	return dst
}
