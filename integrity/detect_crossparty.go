package integrity

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/splitguard/splitguard/internal/buf"
	"github.com/splitguard/splitguard/nn"
	"github.com/splitguard/splitguard/tensor"
)

// The cross-party detector's settings (the warm-up, the forgetting
// weight, the inlier bound τ, the learning rate and the seed are the
// autoencoder detector's: aeWarmup, aeDecay, aeTau, aeLR, aeSeed).
const (
	// cpSDFloor: the standard deviation a party's batch error is z-scored
	// by is at least cpSDFloor times its running mean (a history of equal
	// batches would otherwise divide by zero).
	cpSDFloor = 0.05
)

func init() {
	RegisterDetector(DetectorSpec{Name: "vflip",
		Help: "VFLIP's cross-party reconstruction (several passive parties): a masked autoencoder trained online on the concatenated embeddings reconstructs each party's block from the other parties'; a party scores the z-score of its batch's reconstruction error against its own history, the detector the largest",
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
// 2024) for K ≥ 2 passive parties under concat. The active party's rows
// e = [e_1 | … | e_K] are standardised column by column by running
// moments (as the autoencoder detector's, with the variance floor a
// tenth of the mean variance of the column's own block). A masked
// autoencoder D → h = max(8, 2D) (ReLU) → D (no bottleneck: the mask is what keeps it from copying; 2D units represent a linear map with a ReLU pair per dimension), D = Σ d_k, reconstructs
// block k from the row with block k set to zero; party k's error on a
// row is the mean squared error over its block's columns. On each batch
// the detector masks every party in turn: party k's batch error m_k is
// the mean of its rows' errors, and after the ten-batch warm-up its
// score is z_k = (m_k − μ_k) / max(σ_k, 0.05 μ_k), μ_k and σ² the
// running mean and variance of its earlier batch errors (inlier rows
// only; an average over the warm-up, then exponential forgetting with
// weight 0.1). The detector's score is max_k z_k. The network, the
// moments and the histories then learn from the batch's inlier rows,
// those whose every party's error is at most 10 × μ_k: one Adam step
// per masked party, on the loss Σ_k mean_i err_ik of the inliers.
type crossParty struct {
	names    []string
	cols     [][2]int
	width    int
	batches  int
	mean, vr []float64
	enc, dec *nn.Dense
	relu     nn.ReLU
	opt      *nn.Adam
	params   []*nn.Param

	z, x, dy  tensor.Matrix
	masks     [][]int       // the sets of parties masked together (masksOf)
	merr      [][][]float64 // merr[m][i][r]: mask m's i-th party's error on row r
	err       [][]float64   // err[k][r]: party k's error on row r, the least over its masks
	inlier    []bool
	inlierCnt int
	errMean   []float64 // μ_k
	errVar    []float64 // σ²_k
	scores    []float64 // z_k of the last batch
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
	c.names, c.cols, c.width = append([]string(nil), names...), append([][2]int(nil), cols...), at
	c.reset()
	return nil
}

// PartyScores implements CrossPartyDetector.
func (c *crossParty) PartyScores() []float64 { return c.scores }

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
	c.err = make([][]float64, k)
	c.masks = masksOf(k)
	c.merr = make([][][]float64, len(c.masks))
	for m, mask := range c.masks {
		c.merr[m] = make([][]float64, len(mask))
	}
	c.errMean, c.errVar, c.scores = make([]float64, k), make([]float64, k), make([]float64, k)
}

// Observe implements Detector. It panics on an embedding whose width is
// not the blocks' (Guard checks both before).
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
		c.robustErrors(e.Rows)
	}
	c.inlier = buf.Grow(c.inlier, e.Rows)
	c.inlierCnt = 0
	for r := range e.Rows {
		in := true
		for k := range c.cols {
			if warm && c.err[k][r] > aeTau*c.errMean[k] {
				in = false
			}
		}
		c.inlier[r] = in
		if in {
			c.inlierCnt++
		}
	}
	score := 0.0
	if warm {
		score = math.Inf(-1)
		for k := range c.cols {
			m := 0.0
			for _, v := range c.err[k][:e.Rows] {
				m += v
			}
			m /= float64(e.Rows)
			c.scores[k] = (m - c.errMean[k]) / max(math.Sqrt(c.errVar[k]), cpSDFloor*c.errMean[k], 1e-12)
			score = max(score, c.scores[k])
		}
	}
	c.learn(e, warm)
	return score
}

// standardise writes e's rows, standardised by the running moments,
// into c.z.
func (c *crossParty) standardise(e *tensor.Matrix) {
	c.z.Resize(e.Rows, e.Cols)
	for _, b := range c.cols {
		floor := 0.0
		for _, v := range c.vr[b[0]:b[1]] {
			floor += v
		}
		floor = 0.1*floor/float64(b[1]-b[0]) + 1e-12
		for col := b[0]; col < b[1]; col++ {
			s := 1 / math.Sqrt(max(c.vr[col], floor))
			for r := range e.Rows {
				c.z.Data[r*e.Cols+col] = float32((float64(e.Data[r*e.Cols+col]) - c.mean[col]) * s)
			}
		}
	}
}

// masksOf lists the sets of parties masked together: each party alone,
// then each pair, when a third party is left to predict them from.
func masksOf(k int) [][]int {
	var out [][]int
	for a := range k {
		out = append(out, []int{a})
	}
	if k < 3 {
		return out
	}
	for a := range k {
		for b := a + 1; b < k; b++ {
			out = append(out, []int{a, b})
		}
	}
	return out
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

// robustErrors sets c.err[k][r], party k's error on row r, to the least
// of its errors over the masks that hide it: a party whose block is out
// of line spoils the others' reconstruction only while it is seen, and
// one of the masks hides it too.
func (c *crossParty) robustErrors(rows int) {
	for k := range c.cols {
		c.err[k] = buf.Grow(c.err[k], rows)
		for r := range rows {
			c.err[k][r] = math.Inf(1)
		}
	}
	for m, mask := range c.masks {
		for i, k := range mask {
			for r, v := range c.merr[m][i][:rows] {
				c.err[k][r] = min(c.err[k][r], v)
			}
		}
	}
}

// learn updates the network, the error histories and the moments from
// e's inlier rows (every row during the warm-up).
func (c *crossParty) learn(e *tensor.Matrix, warm bool) {
	w := aeDecay
	if !warm {
		w = 1 / float64(c.batches+1)
	}
	if c.batches > 0 && c.inlierCnt > 0 {
		// The errors start at the second batch: during the warm-up
		// their history is the plain mean and variance.
		ew := aeDecay
		if !warm {
			ew = 1 / float64(c.batches)
		}
		for k := range c.cols {
			d := c.inlierErr(k) - c.errMean[k]
			c.errMean[k] += ew * d
			c.errVar[k] = (1 - ew) * (c.errVar[k] + ew*d*d)
		}
		for m := range c.masks {
			c.reconstruct(m) // the forward pass again, for this mask's backward
			c.maskOutliers(e.Rows)
			c.enc.Backward(c.relu.Backward(c.dec.Backward(&c.dy)))
			c.opt.Step(c.params)
		}
	}
	c.batches++
	blendMoments(c.mean, c.vr, e, w, func(r int) bool { return c.inlier[r] })
}

// inlierErr is the mean of party k's errors over the inlier rows.
func (c *crossParty) inlierErr(k int) float64 {
	s := 0.0
	for r, in := range c.inlier[:c.z.Rows] {
		if in {
			s += c.err[k][r]
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
