package integrity

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/splitguard/splitguard/internal/buf"
	"github.com/splitguard/splitguard/nn"
	"github.com/splitguard/splitguard/tensor"
)

// The cross-party detector's settings besides these are the autoencoder
// detector's: aeWarmup, aeDecay, aeTau, aeLR, aeSeed.
const (
	// cpSDAbs: the standard deviation a pair's statistic (a sum of two
	// logarithms of error ratios) is z-scored by is at least cpSDAbs, so
	// that a history of equal batches does not divide by zero.
	cpSDAbs = 0.02
	// cpNoInfoEps: an error ratio's numerator and denominator both get
	// cpNoInfoEps times the mean no-information error of the blocks, so
	// that a block without variation (a constant) has ratio 1, as a
	// block that shares nothing.
	cpNoInfoEps = 0.01
	// cpAllVarFloor: a column's variance is also floored at this share of
	// the mean variance of every column, so that a block whose bottom is
	// dead (variance 0) does not blow up when it wakes.
	cpAllVarFloor = 0.01
)

func init() {
	RegisterDetector(DetectorSpec{Name: "vflip",
		Help: "VFLIP's cross-party reconstruction (several passive parties, aggregation concat): a masked autoencoder trained online on the concatenated embeddings reconstructs each party's block from each other party's; a pair of parties scores how much less each predicts the other than in its history (both directions, each error relative to knowing nothing), a party the majority vote over its pairs, the detector the largest",
		New:  func() Detector { return &crossParty{} }})
}

// CrossPartyDetector is a detector that sees the embedding as the
// blocks of several passive parties (aggregation concat) and scores each
// party. Guard.SetParties gives it the blocks before the first batch.
type CrossPartyDetector interface {
	Detector
	// SetBlocks gives the parties' names and each one's columns [from,
	// to) of the combined embedding; it refuses fewer than two blocks.
	SetBlocks(names []string, cols [][2]int) error
	// PartyScores are each party's scores of the last batch (valid until
	// the next Observe), in the order of SetBlocks.
	PartyScores() []float64
}

// crossParty is the identification part of VFLIP (Cho et al., ESORICS
// 2024) for K ≥ 2 passive parties under concat, online. The rows
// e = [e_1 | … | e_K] are standardised column by column by the batch's
// own moments (standardise). A masked autoencoder
// D → h = max(8, 2D) (ReLU) → D, D = Σ d_k, sees a row with some blocks
// set to zero and reconstructs them (no bottleneck: the mask keeps it
// from copying; 2D units give a ReLU pair per dimension for a linear
// map). It learns VFLIP's two tasks, each party alone masked ("N−1 to
// 1") and every party but one masked ("1 to 1"; the same masks when
// K = 2), one Adam step per mask and batch on the sum over the masked
// blocks of the rows' mean squared error over the block's columns.
//
// Scoring uses the "1 to 1" masks. m_ij is the batch's mean error of
// block i reconstructed from block j alone and b_i the error of knowing
// nothing (predicting every column's mean: the mean over the block's
// columns of their standardised variance, 1 for a column not floored, 0
// for a constant one). The pair {i, j} is scored by how much worse than
// in its history the two blocks predict each other,
//
//	x_ij = log((m_ij + ε)/(b_i + ε)) + log((m_ji + ε)/(b_j + ε)),
//	z_ij = (x_ij − μ_ij) / max(σ_ij, 0.02),
//
// ε = 0.01 · mean_k b_k, μ_ij and σ²_ij the running mean and variance of
// earlier batches' x_ij (an average over the warm-up, then exponential
// forgetting with weight 0.1), taken over all rows, as the batch's own:
// over the inlier rows only, the history sat below every batch with
// outlier rows, and an honest run's score climbed with their share.
// Both directions count because a cheater can break a pair either way: a
// noise block is predicted no better than knowing nothing (m_ij → b_i),
// and a constant block, itself trivially "predicted" (m_ij = b_i = 0,
// ratio 1 by ε), predicts nothing of the others (m_ji → b_j). Dividing by b_i makes a
// pair's level the share of what is left to predict, so that columns
// floored by the standardisation do not dilute it. Party i's score is
// the (⌊(K−1)/2⌋+1)-th largest of its K−1 pairs' z-scores: it reaches a
// threshold exactly when a majority of the other parties vote that i's
// block disagrees with theirs (VFLIP's vote, taken per batch, not per
// row). A cheating party breaks every pair of its own but only one of
// each other party's. With K = 2 both parties share their only pair: the
// detector sees a disagreement and cannot say whose. The detector's score
// is the largest party score (0 during the ten-batch warm-up). The network
// learns from the batch's inlier rows only, those whose every error is at
// most 10 times its pair direction's running mean error over inliers.
type crossParty struct {
	names    []string
	cols     [][2]int
	width    int
	batches  int
	mean, vr []float64 // the batch's column moments (standardise)
	noInfo   []float64 // b_k: block k's error when nothing is known (standardise)
	enc, dec *nn.Dense
	relu     nn.ReLU
	opt      *nn.Adam
	params   []*nn.Param

	z, x, dy  tensor.Matrix
	masks     [][]int       // the sets of parties masked together (masksOf)
	keep      []int         // keep[j]: the mask hiding every party but j
	merr      [][][]float64 // merr[m][i][r]: mask m's i-th masked party's error on row r
	inlier    []bool
	inlierCnt int
	pairMean  [][]float64 // running mean error of block i from block j (the inlier rule)
	symMean   [][]float64 // μ_ij of the pair statistic x_ij (i < j)
	symVar    [][]float64 // σ²_ij
	pairStat  [][]float64 // scratch: the batch's x_ij (i < j)
	z1        []float64   // scratch: one party's K−1 z-scores
	scores    []float64   // each party's score of the last batch
}

func (c *crossParty) Name() string { return "vflip" }

// SetBlocks implements CrossPartyDetector.
func (c *crossParty) SetBlocks(names []string, cols [][2]int) error {
	at, err := checkBlocks("vflip", names, cols)
	if err != nil {
		return err
	}
	c.names, c.cols, c.width = slices.Clone(names), slices.Clone(cols), at
	c.reset()
	return nil
}

// PartyScores implements CrossPartyDetector.
func (c *crossParty) PartyScores() []float64 { return c.scores }

// checkBlocks checks detector det's party blocks (SetBlocks): at least
// two, one name each, each following the one before from column 0. It
// returns the width they span.
func checkBlocks(det string, names []string, cols [][2]int) (int, error) {
	if len(cols) < 2 {
		return 0, fmt.Errorf("integrity: detector %s reconstructs a party's embedding from the other parties' and needs at least two passive parties' blocks, got %d", det, len(cols))
	}
	if len(names) != len(cols) {
		return 0, fmt.Errorf("integrity: detector %s given %d party names for %d blocks", det, len(names), len(cols))
	}
	at := 0
	for k, b := range cols {
		if b[0] != at || b[1] <= b[0] {
			return 0, fmt.Errorf("integrity: detector %s: party %s's block [%d, %d) does not follow the previous block ending at column %d", det, names[k], b[0], b[1], at)
		}
		at = b[1]
	}
	return at, nil
}

// masksOf lists the sets of k parties masked together: each party alone,
// then (k ≥ 3) every party but one; keep[j] is the mask hiding every
// party but j.
func masksOf(k int) (masks [][]int, keep []int) {
	keep = make([]int, k)
	for a := range k {
		masks = append(masks, []int{a})
	}
	if k == 2 {
		keep[0], keep[1] = 1, 0
		return masks, keep
	}
	for j := range k {
		var m []int
		for a := range k {
			if a != j {
				m = append(m, a)
			}
		}
		keep[j] = len(masks)
		masks = append(masks, m)
	}
	return masks, keep
}

// newMaskNet is the masked autoencoder D → max(8, 2D) (ReLU) → D of the
// cross-party detectors, its parameters and its Adam optimiser.
func newMaskNet(d int) (enc, dec *nn.Dense, params []*nn.Param, opt *nn.Adam) {
	rng := rand.New(rand.NewPCG(aeSeed, uint64(d)))
	h := max(8, 2*d)
	enc = nn.NewDense(d, h, nn.HeNormal, rng)
	enc.SkipInputGrad = true
	dec = nn.NewDense(h, d, nn.GlorotUniform, rng)
	params = append(append([]*nn.Param(nil), enc.Params()...), dec.Params()...)
	return enc, dec, params, nn.NewAdam(aeLR)
}

// reset starts afresh.
func (c *crossParty) reset() {
	d, k := c.width, len(c.cols)
	c.mean, c.vr, c.batches = make([]float64, d), make([]float64, d), 0
	c.enc, c.dec, c.params, c.opt = newMaskNet(d)
	c.masks, c.keep = masksOf(k)
	c.merr = make([][][]float64, len(c.masks))
	for m, mask := range c.masks {
		c.merr[m] = make([][]float64, len(mask))
	}
	c.pairMean, c.symMean, c.symVar, c.pairStat = make([][]float64, k), make([][]float64, k), make([][]float64, k), make([][]float64, k)
	for i := range k {
		c.pairMean[i], c.symMean[i], c.symVar[i], c.pairStat[i] = make([]float64, k), make([]float64, k), make([]float64, k), make([]float64, k)
	}
	c.noInfo = make([]float64, k)
	c.z1, c.scores = make([]float64, 0, k), make([]float64, k)
}

// Observe implements Detector. It panics before SetBlocks or on an
// embedding whose width is not the blocks' (Guard checks both before).
func (c *crossParty) Observe(_ int64, e *tensor.Matrix) float64 {
	if c.cols == nil {
		panic("integrity: detector vflip observed a batch before its parties' blocks were set")
	}
	if e.Cols != c.width {
		panic(fmt.Sprintf("integrity: detector vflip: an embedding of %d columns, the parties' blocks span %d", e.Cols, c.width))
	}
	clear(c.scores)
	if e.Rows == 0 {
		return 0
	}
	warm := c.batches >= aeWarmup
	if c.batches > 0 {
		c.standardise(e)
		for m := range c.masks {
			c.reconstruct(m)
		}
		c.pairStats()
	}
	c.markInliers(e.Rows, warm)
	score := 0.0
	if warm {
		score = math.Inf(-1)
		for i := range c.cols {
			c.scores[i] = c.partyScore(i)
			score = max(score, c.scores[i])
		}
	}
	c.learn(e, warm)
	return score
}

// pairErrors is block i's errors on the rows when reconstructed from
// block j alone.
func (c *crossParty) pairErrors(i, j int) []float64 {
	m := c.keep[j]
	return c.merr[m][slices.Index(c.masks[m], i)]
}

// markInliers marks the rows whose every pair error is at most τ μ_ij
// (every row during the warm-up).
func (c *crossParty) markInliers(rows int, warm bool) {
	c.inlier = buf.Grow(c.inlier, rows)
	c.inlierCnt = 0
	for r := range rows {
		in := true
		for i := range c.cols {
			for j := range c.cols {
				if warm && i != j && c.pairErrors(i, j)[r] > aeTau*c.pairMean[i][j] {
					in = false
				}
			}
		}
		c.inlier[r] = in
		if in {
			c.inlierCnt++
		}
	}
}

// partyScore is party i's majority vote: the (⌊(K−1)/2⌋+1)-th largest
// of the z-scores z_ij of its pairs {i, j} (pairStats has set x_ij).
func (c *crossParty) partyScore(i int) float64 {
	c.z1 = c.z1[:0]
	for j := range c.cols {
		if j == i {
			continue
		}
		a, b := min(i, j), max(i, j)
		c.z1 = append(c.z1, (c.pairStat[a][b]-c.symMean[a][b])/max(math.Sqrt(c.symVar[a][b]), cpSDAbs))
	}
	slices.Sort(c.z1)
	return c.z1[len(c.z1)-(len(c.z1)/2+1)]
}

// pairStats sets c.pairStat[i][j] (i < j) to the pair statistic x_ij of
// the batch's rows.
func (c *crossParty) pairStats() {
	eps := 0.0
	for _, b := range c.noInfo {
		eps += b
	}
	eps = cpNoInfoEps*eps/float64(len(c.noInfo)) + 1e-12
	mean := func(i, j int) float64 {
		errs := c.pairErrors(i, j)[:c.z.Rows]
		s := 0.0
		for _, v := range errs {
			s += v
		}
		return s / float64(len(errs))
	}
	for i := range c.cols {
		for j := i + 1; j < len(c.cols); j++ {
			c.pairStat[i][j] = math.Log((mean(i, j)+eps)/(c.noInfo[i]+eps)) + math.Log((mean(j, i)+eps)/(c.noInfo[j]+eps))
		}
	}
}

// standardise writes e's rows, standardised by the batch's own column
// means and variances, into c.z (a column's variance floored at a tenth
// of its block's mean variance and at cpAllVarFloor of every column's):
// a party's bottom that drifts while it trains moves its columns' moments
// together, which the batch's own moments take out; what is left is how
// the parties' rows relate.
func (c *crossParty) standardise(e *tensor.Matrix) {
	c.z.Resize(e.Rows, e.Cols)
	n := float64(e.Rows)
	for col := range e.Cols {
		var s, s2 float64
		for r := range e.Rows {
			v := float64(e.Data[r*e.Cols+col])
			s += v
			s2 += v * v
		}
		c.mean[col] = s / n
		c.vr[col] = max(s2/n-c.mean[col]*c.mean[col], 0)
	}
	all := 0.0
	for _, v := range c.vr {
		all += v
	}
	all /= float64(len(c.vr))
	for k, b := range c.cols {
		floor := varFloor(c.vr, b, all)
		c.noInfo[k] = 0
		for col := b[0]; col < b[1]; col++ {
			c.noInfo[k] += c.vr[col] / max(c.vr[col], floor)
			s := 1 / math.Sqrt(max(c.vr[col], floor))
			for r := range e.Rows {
				c.z.Data[r*e.Cols+col] = float32((float64(e.Data[r*e.Cols+col]) - c.mean[col]) * s)
			}
		}
		c.noInfo[k] /= float64(b[1] - b[0])
	}
}

// varFloor is the floor of a variance in block b of the column
// variances vr: a tenth of the block's mean variance, at least
// cpAllVarFloor times all, the mean variance of every column.
func varFloor(vr []float64, b [2]int, all float64) float64 {
	floor := 0.0
	for _, v := range vr[b[0]:b[1]] {
		floor += v
	}
	return max(0.1*floor/float64(b[1]-b[0]), cpAllVarFloor*all) + 1e-12
}

// blockErrors sets errs[r] to row r's mean squared error of y against z
// over the columns [from, to) (rows of width d) and dy's entries there to
// that error's gradient in y, over rows rows (the mean over the rows).
func blockErrors(errs []float64, y, z, dy *tensor.Matrix, from, to, rows int) {
	d, w := z.Cols, float64(to-from)
	for r := range rows {
		s := 0.0
		for col := from; col < to; col++ {
			diff := float64(y.Data[r*d+col]) - float64(z.Data[r*d+col])
			s += diff * diff
			dy.Data[r*d+col] = float32(2 * diff / (w * float64(rows)))
		}
		errs[r] = s / w
	}
}

// reconstruct runs c.z with mask m's blocks set to zero through the
// network: c.merr[m][i] holds each row's mean squared error on the i-th
// masked block and c.dy the gradient, with respect to the output, of the
// sum over the masked blocks of the mean over the rows of that error
// (zero outside the masked blocks).
func (c *crossParty) reconstruct(m int) {
	rows, d := c.z.Rows, c.z.Cols
	c.x.Resize(rows, d)
	copy(c.x.Data, c.z.Data[:rows*d])
	for _, k := range c.masks[m] {
		for r := range rows {
			clear(c.x.Data[r*d+c.cols[k][0] : r*d+c.cols[k][1]])
		}
	}
	y := c.dec.Forward(c.relu.Forward(c.enc.Forward(&c.x)))
	c.dy.Resize(rows, d)
	clear(c.dy.Data)
	for i, k := range c.masks[m] {
		c.merr[m][i] = buf.Grow(c.merr[m][i], rows)
		blockErrors(c.merr[m][i], y, &c.z, &c.dy, c.cols[k][0], c.cols[k][1], rows)
	}
}

// learn updates the histories (the pair statistics of every row, the
// pair errors' means of the inlier rows) and the network from e's inlier
// rows (every row during the warm-up).
func (c *crossParty) learn(e *tensor.Matrix, warm bool) {
	if c.batches > 0 && c.inlierCnt > 0 {
		// The errors start at the second batch: during the warm-up
		// their history is the plain mean and variance.
		ew := aeDecay
		if !warm {
			ew = 1 / float64(c.batches)
		}
		for i := range c.cols {
			for j := range c.cols {
				if i == j {
					continue
				}
				c.pairMean[i][j] += ew * (c.inlierMean(c.pairErrors(i, j)) - c.pairMean[i][j])
				if i < j {
					d := c.pairStat[i][j] - c.symMean[i][j]
					c.symMean[i][j] += ew * d
					c.symVar[i][j] = (1 - ew) * (c.symVar[i][j] + ew*d*d)
				}
			}
		}
		for m := range c.masks {
			c.reconstruct(m) // the forward pass again, for this mask's backward
			c.maskOutliers(e.Rows)
			c.enc.Backward(c.relu.Backward(c.dec.Backward(&c.dy)))
			c.opt.Step(c.params)
		}
	}
	c.batches++
}

// inlierMean is the mean of errs over the inlier rows.
func (c *crossParty) inlierMean(errs []float64) float64 {
	s := 0.0
	for r, in := range c.inlier[:c.z.Rows] {
		if in {
			s += errs[r]
		}
	}
	return s / float64(c.inlierCnt)
}

// maskOutliers makes c.dy the gradient of the mean over the inlier rows
// only: the outliers' rows are zero, the others rescaled.
func (c *crossParty) maskOutliers(rows int) {
	scale := float32(rows) / float32(c.inlierCnt)
	d := c.dy.Cols
	for r := range rows {
		row := c.dy.Data[r*d : (r+1)*d]
		if !c.inlier[r] {
			clear(row)
			continue
		}
		for i := range row {
			row[i] *= scale
		}
	}
}
