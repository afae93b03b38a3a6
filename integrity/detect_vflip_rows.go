package integrity

import (
	"fmt"
	"math"
	"slices"

	"github.com/splitguard/splitguard/internal/buf"
	"github.com/splitguard/splitguard/nn"
	"github.com/splitguard/splitguard/tensor"
)

const (
	// VflipRowsThreshold is the z-score past which a pair votes that a
	// party's block of a row is anomalous (the error's mean plus two
	// standard deviations over the training rows).
	VflipRowsThreshold = 2.0
	// vrStatDecay is a training batch's weight in the running per-row
	// error statistics after the warm-up (about the last 20 batches).
	vrStatDecay = 0.05
)

func init() {
	RegisterDetector(DetectorSpec{Name: "vflip_rows",
		Help: "VFLIP at inference (several passive parties, aggregation concat): a masked autoencoder learns during training to reconstruct each party's block from the others; each test row's block of each party is z-scored by its reconstruction error from each other party against the training rows' errors, flagged by a majority vote and replaced by its reconstruction before the top runs (backdoor.vflip_rows in summary.json); its training score is the batch's largest row score",
		New:  func() Detector { return &VflipRows{Threshold: VflipRowsThreshold} }})
}

// RowPurifier scores single rows of the combined embedding and purifies
// them at inference (VflipRows).
type RowPurifier interface {
	// ScoreRows writes each row's score of e into scores (len e.Rows) and
	// whether each party's block of it is flagged into flagged (len
	// e.Rows × parties, row-major).
	ScoreRows(e *tensor.Matrix, scores []float64, flagged []bool)
	// Purify replaces in e every flagged block (ScoreRows) by its
	// reconstruction from the row's blocks not flagged.
	Purify(e *tensor.Matrix, flagged []bool)
	// Parties is the number of blocks; RowThreshold the score past which
	// a block is flagged.
	Parties() int
	RowThreshold() float64
}

// VflipRows is VFLIP (Cho et al., ESORICS 2024) for K ≥ 2 passive
// parties under concat, as the paper applies it: identification and
// purification of single rows at inference. During training it learns,
// from every training batch the active receives, a masked autoencoder
// D → max(8, 2D) (ReLU) → D over the rows standardised by running column
// moments of the training batches (the cross-party detector's network
// and masks: each party alone masked, "N−1 to 1", and every party but
// one masked, "1 to 1"). Before each batch's step it records the
// training rows' per-row errors s_ij (block i's mean squared error over
// its columns, reconstructed from block j alone): their running mean μ_ij
// and standard deviation σ_ij (a plain average over the warm-up, then
// forgetting 0.05 per batch).
//
// At inference (ScoreRows) a row's pair (i, j) votes that block i is
// anomalous when z_ij = (s_ij − μ_ij)/σ_ij exceeds Threshold; block i is
// flagged when a majority of its K−1 pairs vote, that is when its score,
// the (⌊(K−1)/2⌋+1)-th largest z_ij, exceeds Threshold. The row's score
// is its largest party score. Purify zeroes the flagged blocks of a row
// and puts the network's reconstruction of them, in the embedding's
// scale, in their place.
type VflipRows struct {
	// Threshold is the z-score past which a pair votes.
	Threshold float64

	names    []string
	cols     [][2]int
	width    int
	batches  int
	mean, vr []float64 // running column moments of the training batches
	sd       []float64 // the standardisation's column scale (setScale)
	enc, dec *nn.Dense
	relu     nn.ReLU
	opt      *nn.Adam
	params   []*nn.Param

	errMean, errSq [][]float64 // running mean of s_ij and of s_ij² over training rows
	masks          [][]int
	keep           []int
	z, x, dy       tensor.Matrix
	rowErr         []float64 // scratch: one mask's errors, masked blocks × rows
	zs             []float64 // scratch: one party's K−1 z-scores
	zAll           []float64 // scratch: rows × K × K z-scores
	partyMax       []float64 // each party's largest row score of the last rows scored
	rowScores      []float64
	rowFlags       []bool
}

// Name implements Detector.
func (v *VflipRows) Name() string { return "vflip_rows" }

// Parties implements RowPurifier.
func (v *VflipRows) Parties() int { return len(v.cols) }

// SetRowThreshold sets Threshold (key vflip_rows_threshold).
func (v *VflipRows) SetRowThreshold(t float64) { v.Threshold = t }

// RowThreshold implements RowPurifier.
func (v *VflipRows) RowThreshold() float64 { return v.Threshold }

// PartyScores implements CrossPartyDetector: each party's largest row
// score of the last rows scored (0 over the warm-up).
func (v *VflipRows) PartyScores() []float64 { return v.partyMax }

// SetBlocks implements CrossPartyDetector.
func (v *VflipRows) SetBlocks(names []string, cols [][2]int) error {
	at, err := checkBlocks("vflip_rows", names, cols)
	if err != nil {
		return err
	}
	v.names, v.cols, v.width = slices.Clone(names), slices.Clone(cols), at
	d, k := v.width, len(cols)
	v.enc, v.dec, v.params, v.opt = newMaskNet(d)
	v.masks, v.keep = masksOf(k)
	v.mean, v.vr, v.sd, v.batches = make([]float64, d), make([]float64, d), make([]float64, d), 0
	v.errMean, v.errSq, v.partyMax = make([][]float64, k), make([][]float64, k), make([]float64, k)
	for i := range k {
		v.errMean[i], v.errSq[i] = make([]float64, k), make([]float64, k)
	}
	return nil
}

// Observe implements Detector: it scores the batch's rows against the
// statistics so far (the largest row score; 0 over the warm-up), then
// adds the batch to the statistics and learns from it.
func (v *VflipRows) Observe(_ int64, e *tensor.Matrix) float64 {
	if v.cols == nil {
		panic("integrity: detector vflip_rows observed a batch before its parties' blocks were set")
	}
	if e.Cols != v.width {
		panic(fmt.Sprintf("integrity: detector vflip_rows: an embedding of %d columns, the parties' blocks span %d", e.Cols, v.width))
	}
	if e.Rows == 0 {
		return 0
	}
	score := 0.0
	if v.batches >= aeWarmup {
		v.rowScores = buf.Grow(v.rowScores, e.Rows)
		v.rowFlags = buf.Grow(v.rowFlags, e.Rows*len(v.cols))
		v.ScoreRows(e, v.rowScores, v.rowFlags)
		score = slices.Max(v.rowScores)
	}
	v.addMoments(e)
	v.standardise(e)
	if v.batches > 0 {
		v.addErrors()
	}
	for m := range v.masks {
		v.reconstruct(m, nil)
		v.enc.Backward(v.relu.Backward(v.dec.Backward(&v.dy)))
		v.opt.Step(v.params)
	}
	v.batches++
	return score
}

// addMoments adds e's column moments to the running ones (the plain
// mean over the warm-up, then forgetting aeDecay) and sets the scale.
func (v *VflipRows) addMoments(e *tensor.Matrix) {
	w := aeDecay
	if v.batches < aeWarmup {
		w = 1 / float64(v.batches+1)
	}
	n := float64(e.Rows)
	for col := range e.Cols {
		var s, s2 float64
		for r := range e.Rows {
			x := float64(e.Data[r*e.Cols+col])
			s += x
			s2 += x * x
		}
		m := s / n
		v.mean[col] += w * (m - v.mean[col])
		v.vr[col] += w * (max(s2/n-m*m, 0) - v.vr[col])
	}
	v.setScale()
}

// setScale sets each column's scale: the square root of its variance
// floored at a tenth of its block's mean variance and at cpAllVarFloor
// of every column's (as the cross-party detector's standardisation).
func (v *VflipRows) setScale() {
	all := 0.0
	for _, x := range v.vr {
		all += x
	}
	all /= float64(len(v.vr))
	for _, b := range v.cols {
		floor := varFloor(v.vr, b, all)
		for col := b[0]; col < b[1]; col++ {
			v.sd[col] = math.Sqrt(max(v.vr[col], floor))
		}
	}
}

// standardise writes e's rows standardised by the running moments into
// v.z.
func (v *VflipRows) standardise(e *tensor.Matrix) {
	v.z.Resize(e.Rows, e.Cols)
	for r := range e.Rows {
		for col := range e.Cols {
			i := r*e.Cols + col
			v.z.Data[i] = float32((float64(e.Data[i]) - v.mean[col]) / v.sd[col])
		}
	}
}

// addErrors adds the standardised batch's per-row pair errors to their
// running mean and mean square.
func (v *VflipRows) addErrors() {
	w := vrStatDecay
	if v.batches <= aeWarmup {
		w = 1 / float64(v.batches)
	}
	rows := v.z.Rows
	for j := range v.cols {
		m := v.keep[j]
		v.reconstruct(m, nil)
		for a, i := range v.masks[m] {
			var s, s2 float64
			for r := range rows {
				x := v.rowErr[a*rows+r]
				s += x
				s2 += x * x
			}
			v.errMean[i][j] += w * (s/float64(rows) - v.errMean[i][j])
			v.errSq[i][j] += w * (s2/float64(rows) - v.errSq[i][j])
		}
	}
}

// reconstruct runs v.z with mask m's blocks set to zero (or, with rowMask
// given, each row's flagged blocks) through the network. With a mask
// index, v.rowErr holds each row's mean squared error on each of the
// mask's blocks (len(masks[m]) × rows) and v.dy the gradient, with
// respect to the output, of the sum over the masked blocks of the mean
// over the rows of that error. It returns the network's output.
func (v *VflipRows) reconstruct(m int, rowMask []bool) *tensor.Matrix {
	rows, d, k := v.z.Rows, v.z.Cols, len(v.cols)
	v.x.Resize(rows, d)
	copy(v.x.Data, v.z.Data[:rows*d])
	for r := range rows {
		for p, b := range v.cols {
			if (rowMask == nil && slices.Contains(v.masks[m], p)) || (rowMask != nil && rowMask[r*k+p]) {
				clear(v.x.Data[r*d+b[0] : r*d+b[1]])
			}
		}
	}
	y := v.dec.Forward(v.relu.Forward(v.enc.Forward(&v.x)))
	if rowMask != nil {
		return y
	}
	mask := v.masks[m]
	v.dy.Resize(rows, d)
	clear(v.dy.Data)
	v.rowErr = buf.Grow(v.rowErr, rows*len(mask))
	for a, p := range mask {
		blockErrors(v.rowErr[a*rows:(a+1)*rows], y, &v.z, &v.dy, v.cols[p][0], v.cols[p][1], rows)
	}
	return y
}

// ScoreRows implements RowPurifier. Before ten training batches every
// score is 0 and nothing is flagged.
func (v *VflipRows) ScoreRows(e *tensor.Matrix, scores []float64, flagged []bool) {
	k := len(v.cols)
	if len(scores) != e.Rows || len(flagged) != e.Rows*k || e.Cols != v.width {
		panic(fmt.Sprintf("integrity: vflip_rows: scoring %d×%d rows into %d scores and %d flags (%d parties over %d columns)", e.Rows, e.Cols, len(scores), len(flagged), k, v.width))
	}
	clear(scores)
	clear(flagged)
	clear(v.partyMax)
	if v.batches < aeWarmup || e.Rows == 0 {
		return
	}
	v.standardise(e)
	// zAll[r][i][j]: rows × K × K z-scores, filled mask by mask.
	v.zAll = buf.Grow(v.zAll, e.Rows*k*k)
	zAll := v.zAll
	for j := range v.cols {
		m := v.keep[j]
		v.reconstruct(m, nil)
		for a, i := range v.masks[m] {
			mu := v.errMean[i][j]
			sd := math.Sqrt(max(v.errSq[i][j]-mu*mu, 0)) + 1e-12
			for r := range e.Rows {
				zAll[(r*k+i)*k+j] = (v.rowErr[a*e.Rows+r] - mu) / sd
			}
		}
	}
	for i := range v.partyMax {
		v.partyMax[i] = math.Inf(-1)
	}
	for r := range e.Rows {
		best := math.Inf(-1)
		for i := range k {
			v.zs = v.zs[:0]
			for j := range k {
				if j != i {
					v.zs = append(v.zs, zAll[(r*k+i)*k+j])
				}
			}
			slices.Sort(v.zs)
			s := v.zs[len(v.zs)-(len(v.zs)/2+1)]
			flagged[r*k+i] = s > v.Threshold
			best = max(best, s)
			v.partyMax[i] = max(v.partyMax[i], s)
		}
		scores[r] = best
	}
}

// Purify implements RowPurifier.
func (v *VflipRows) Purify(e *tensor.Matrix, flagged []bool) {
	k := len(v.cols)
	if len(flagged) != e.Rows*k || e.Cols != v.width {
		panic(fmt.Sprintf("integrity: vflip_rows: purifying %d×%d rows with %d flags (%d parties over %d columns)", e.Rows, e.Cols, len(flagged), k, v.width))
	}
	if !slices.Contains(flagged, true) {
		return
	}
	v.standardise(e)
	y := v.reconstruct(-1, flagged)
	for r := range e.Rows {
		for p, b := range v.cols {
			if !flagged[r*k+p] {
				continue
			}
			for col := b[0]; col < b[1]; col++ {
				i := r*e.Cols + col
				e.Data[i] = float32(v.mean[col] + float64(y.Data[i])*v.sd[col])
			}
		}
	}
}

// IsRowPurifier reports whether the named detector purifies rows at
// inference (a RowPurifier, such as vflip_rows).
func IsRowPurifier(name string) bool {
	s, ok := detectors[name]
	if !ok {
		return false
	}
	_, p := s.New().(RowPurifier)
	return p
}

// RowPurifierNames lists the registered row-purifying detectors, sorted.
func RowPurifierNames() []string {
	var out []string
	for _, n := range DetectorNames() {
		if IsRowPurifier(n) {
			out = append(out, n)
		}
	}
	return out
}

// RowPurifier is the guard's first detector that purifies rows at
// inference (vflip_rows), nil if none.
func (g *Guard) RowPurifier() RowPurifier {
	if g == nil {
		return nil
	}
	for _, d := range g.dets {
		if p, ok := d.(RowPurifier); ok {
			return p
		}
	}
	return nil
}
