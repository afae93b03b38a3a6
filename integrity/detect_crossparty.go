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

// cpSDFloor: the standard deviation a batch error is z-scored by is at
// least cpSDFloor times its running mean (a history of equal batches
// would otherwise divide by zero). The cross-party detector's other
// settings are the autoencoder detector's: aeWarmup, aeDecay, aeTau,
// aeLR, aeSeed.
const (
	cpSDFloor = 0.05
	// cpSDAbs: that standard deviation is also at least cpSDAbs in
	// standardised units (1 is the error of predicting a column's mean),
	// so that a block reconstructed almost exactly does not turn the
	// optimiser's jitter into large z-scores.
	cpSDAbs = 0.01
	// cpAllVarFloor: a column's variance is also floored at this share of
	// the mean variance of every column, so that a block whose bottom is
	// dead (variance 0) does not blow up when it wakes.
	cpAllVarFloor = 0.01
)

func init() {
	RegisterDetector(DetectorSpec{Name: "vflip",
		Help: "VFLIP's cross-party reconstruction (several passive parties, aggregation concat): a masked autoencoder trained online on the concatenated embeddings reconstructs each party's block from each other party's; a party scores the majority vote of the z-scores of those errors against their history, the detector the largest",
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
// Scoring uses the "1 to 1" masks: m_ij, the batch's mean error of block
// i reconstructed from block j alone, is z-scored against its history,
// z_ij = (m_ij − μ_ij) / max(σ_ij, 0.05 μ_ij) (μ_ij and σ²_ij the
// running mean and variance of earlier batches' errors over their inlier
// rows: an average over the warm-up, then exponential forgetting with
// weight 0.1). Party i's score is the (⌊(K−1)/2⌋+1)-th largest of its
// K−1 z-scores: it reaches a threshold exactly when a majority of the
// other parties vote that i's block disagrees with theirs (VFLIP's vote,
// taken per batch, not per row). A party whose block is out of line
// raises every z_ij of its own but only one of each other party's. With
// K = 2 the two parties' scores are the same evidence: the detector sees
// a disagreement and cannot say whose. The detector's score is the
// largest party score (0 during the ten-batch warm-up). The network and
// the histories learn from the batch's inlier rows only,
// those whose every error is at most 10 μ_ij.
type crossParty struct {
	names    []string
	cols     [][2]int
	width    int
	batches  int
	mean, vr []float64 // the batch's column moments (standardise)
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
	pairMean  [][]float64 // μ_ij (i ≠ j)
	pairVar   [][]float64 // σ²_ij
	z1        []float64   // scratch: one party's K−1 z-scores
	scores    []float64   // each party's score of the last batch
}

func (c *crossParty) Name() string { return "vflip" }

// SetBlocks implements CrossPartyDetector.
func (c *crossParty) SetBlocks(names []string, cols [][2]int) error {
	if len(cols) < 2 {
		return fmt.Errorf("integrity: detector vflip reconstructs a party's embedding from the other parties' and needs at least two passive parties' blocks, got %d", len(cols))
	}
	if len(names) != len(cols) {
		return fmt.Errorf("integrity: detector vflip given %d party names for %d blocks", len(names), len(cols))
	}
	at := 0
	for k, b := range cols {
		if b[0] != at || b[1] <= b[0] {
			return fmt.Errorf("integrity: detector vflip: party %s's block [%d, %d) does not follow the previous block ending at column %d", names[k], b[0], b[1], at)
		}
		at = b[1]
	}
	c.names, c.cols, c.width = slices.Clone(names), slices.Clone(cols), at
	c.reset()
	return nil
}

// PartyScores implements CrossPartyDetector.
func (c *crossParty) PartyScores() []float64 { return c.scores }

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

// reset starts afresh.
func (c *crossParty) reset() {
	d, k := c.width, len(c.cols)
	rng := rand.New(rand.NewPCG(aeSeed, uint64(d)))
	h := max(8, 2*d)
	c.mean, c.vr, c.batches = make([]float64, d), make([]float64, d), 0
	c.enc = nn.NewDense(d, h, nn.HeNormal, rng)
	c.enc.SkipInputGrad = true
	c.dec = nn.NewDense(h, d, nn.GlorotUniform, rng)
	c.params = append(append([]*nn.Param(nil), c.enc.Params()...), c.dec.Params()...)
	c.opt = nn.NewAdam(aeLR)
	c.masks, c.keep = masksOf(k)
	c.merr = make([][][]float64, len(c.masks))
	for m, mask := range c.masks {
		c.merr[m] = make([][]float64, len(mask))
	}
	c.pairMean, c.pairVar = make([][]float64, k), make([][]float64, k)
	for i := range k {
		c.pairMean[i], c.pairVar[i] = make([]float64, k), make([]float64, k)
	}
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
	}
	c.markInliers(e.Rows, warm)
	score := 0.0
	if warm {
		score = math.Inf(-1)
		for i := range c.cols {
			c.scores[i] = c.partyScore(i, e.Rows)
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
// of its z-scores z_ij over the other parties j.
func (c *crossParty) partyScore(i, rows int) float64 {
	c.z1 = c.z1[:0]
	for j := range c.cols {
		if j == i {
			continue
		}
		m := 0.0
		for _, v := range c.pairErrors(i, j)[:rows] {
			m += v
		}
		m /= float64(rows)
		mu := c.pairMean[i][j]
		c.z1 = append(c.z1, (m-mu)/max(math.Sqrt(c.pairVar[i][j]), cpSDFloor*mu, cpSDAbs))
	}
	slices.Sort(c.z1)
	return c.z1[len(c.z1)-(len(c.z1)/2+1)]
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
	for _, b := range c.cols {
		floor := 0.0
		for _, v := range c.vr[b[0]:b[1]] {
			floor += v
		}
		floor = max(0.1*floor/float64(b[1]-b[0]), cpAllVarFloor*all) + 1e-12
		for col := b[0]; col < b[1]; col++ {
			s := 1 / math.Sqrt(max(c.vr[col], floor))
			for r := range e.Rows {
				c.z.Data[r*e.Cols+col] = float32((float64(e.Data[r*e.Cols+col]) - c.mean[col]) * s)
			}
		}
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
		from, to := c.cols[k][0], c.cols[k][1]
		c.merr[m][i] = buf.Grow(c.merr[m][i], rows)
		w := float64(to - from)
		for r := range rows {
			s := 0.0
			for col := from; col < to; col++ {
				diff := float64(y.Data[r*d+col]) - float64(c.z.Data[r*d+col])
				s += diff * diff
				c.dy.Data[r*d+col] = float32(2 * diff / (w * float64(rows)))
			}
			c.merr[m][i][r] = s / w
		}
	}
}

// learn updates the error histories and the network from e's inlier
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
				d := c.inlierMean(c.pairErrors(i, j)) - c.pairMean[i][j]
				c.pairMean[i][j] += ew * d
				c.pairVar[i][j] = (1 - ew) * (c.pairVar[i][j] + ew*d*d)
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
