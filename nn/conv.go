package nn

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/splitguard/splitguard/internal/par"
	"github.com/splitguard/splitguard/internal/vec"
	"github.com/splitguard/splitguard/tensor"
)

// DefaultConvColFloats bounds the im2col buffer of a [Conv2D] (in
// float32 values, 16 MiB): a batch is processed in chunks of whole images
// whose unfolded patches fit in it, so memory stays bounded whatever the
// batch size while each chunk's product is still large enough for the
// BLAS kernels to run near full speed.
const DefaultConvColFloats = 1 << 22

// Conv2D is a 2-D convolution (cross-correlation, as in every deep
// learning library) with a square K×K kernel, stride 1 and 'same' zero
// padding, so the output keeps the input's height and width:
//
//	y[b, r, c, o] = bias[o] + Σ_{i,j,ch} x[b, r+i−P, c+j−P, ch] · W[(i·K+j)·Cin+ch, o]
//
// with P = (K−1)/2 and x taken as zero outside the image (for an even K
// the extra padding row and column are at the bottom and right, as in
// TensorFlow's 'same').
//
// Images are rows of a matrix in NHWC order: a batch is B×(H·W·Cin), row
// b holding image b with the channel index fastest, then the column, then
// the row; the output is B×(H·W·Cout) in the same layout. W is
// (K·K·Cin)×Cout, so that unfolding the K×K patches of an image into the
// rows of a (H·W)×(K·K·Cin) matrix (im2col) turns the convolution into one
// matrix product whose result is already the NHWC output. The batch is
// split in two halves run on two goroutines, each with its own im2col
// buffer; each half runs one [tensor.MatMul] per chunk of images (a single
// one when its patches fit in half of MaxColFloats). Backward computes
// dW = colᵀ·dy (a partial sum per half, added in a fixed order, so results
// are deterministic) and the input gradient dcol = dy·Wᵀ folded back onto
// the image (col2im).
type Conv2D struct {
	H, W, Cin, Cout, K int
	// Weight is (K·K·Cin)×Cout, Bias 1×Cout.
	Weight, Bias *tensor.Matrix
	dW, dB       *tensor.Matrix
	// SkipInputGrad makes Backward skip ∂L/∂x (it returns nil), for a
	// first layer whose input is raw data.
	SkipInputGrad bool
	// MaxColFloats bounds the im2col buffers (DefaultConvColFloats when
	// 0), shared between the two workers; a chunk always holds at least
	// one image.
	MaxColFloats int

	params []*Param
	x      *tensor.Matrix // input of the last Forward (not owned)
	y      tensor.Matrix
	dx     tensor.Matrix
	dxAud  tensor.Matrix
	view   tensor.Matrix // header over dy for the bias gradient
	ws     [convWorkers]convScratch
}

// convWorkers is how many goroutines a Conv2D splits a batch over: the
// images [0, B/2) go to one and [B/2, B) to the other (a batch of one
// image runs on one). The split depends only on B, never on timing, and
// the weight gradient's two partial sums are added in a fixed order, so
// results are deterministic.
const convWorkers = 2

// convScratch is one worker's buffers.
type convScratch struct {
	col   tensor.Matrix // im2col of one chunk
	dcol  tensor.Matrix // gradient w.r.t. col of one chunk
	view  tensor.Matrix // header over part of another buffer
	dW    tensor.Matrix // worker 1's partial weight gradient
	first bool          // no chunk accumulated into dW yet
}

// NewConv2D returns a convolution of h×w×cin images to h×w×cout with a
// k×k kernel, weights drawn from the He normal distribution N(0, 2/fanIn)
// with fanIn = k·k·cin, and zero biases.
func NewConv2D(h, w, cin, cout, k int, rng *rand.Rand) *Conv2D {
	if h <= 0 || w <= 0 || cin <= 0 || cout <= 0 || k <= 0 {
		panic(fmt.Sprintf("nn: Conv2D %d×%d×%d → %d channels with a %d×%d kernel: sizes must be positive", h, w, cin, cout, k, k))
	}
	c := &Conv2D{H: h, W: w, Cin: cin, Cout: cout, K: k,
		Weight: tensor.New(k*k*cin, cout), Bias: tensor.New(1, cout),
		dW: tensor.New(k*k*cin, cout), dB: tensor.New(1, cout)}
	s := math.Sqrt(2 / float64(k*k*cin))
	for i := range c.Weight.Data {
		c.Weight.Data[i] = float32(rng.NormFloat64() * s)
	}
	c.params = []*Param{{Name: "conv.W", W: c.Weight, G: c.dW}, {Name: "conv.b", W: c.Bias, G: c.dB}}
	return c
}

// In returns the input width H·W·Cin.
func (c *Conv2D) In() int { return c.H * c.W * c.Cin }

// Out returns the output width H·W·Cout.
func (c *Conv2D) Out() int { return c.H * c.W * c.Cout }

// Params implements Layer: the weight, then the bias.
func (c *Conv2D) Params() []*Param { return c.params }

// chunk returns how many images one worker's im2col buffer holds.
func (c *Conv2D) chunk() int {
	lim := c.MaxColFloats
	if lim <= 0 {
		lim = DefaultConvColFloats
	}
	return max(1, lim/convWorkers/(c.H*c.W*c.K*c.K*c.Cin))
}

// parallel runs f(w, lo, hi) for worker w's images [lo, hi) of a batch of
// B, in two halves when B ≥ 2 (worker 0 on the caller's goroutine, worker
// 1 on one of internal/par's; each half's products split further on
// goroutines of their own where there are more cores).
func (c *Conv2D) parallel(B int, f func(w, lo, hi int)) {
	if B < 2 {
		f(0, 0, B)
		return
	}
	h := B / 2
	par.Do(2, func(w int) {
		if w == 0 {
			f(0, 0, h)
		} else {
			f(1, h, B)
		}
	})
}

// Forward implements Layer.
func (c *Conv2D) Forward(x *tensor.Matrix) *tensor.Matrix {
	c.checkIn(x)
	c.x = x
	c.y.Resize(x.Rows, c.Out())
	c.parallel(x.Rows, func(w, lo, hi int) { c.forwardImages(w, lo, hi, c.y.Data, false) })
	return &c.y
}

// Conv2DReLU runs c.Forward(x) and then r.Forward on its output as one
// pass: each chunk of images is rectified where its product left it, in
// the cache of the core that computed it, instead of in a pass of its own
// over the whole output, and c's own output, which nothing reads after a
// ReLU, is not written (a batch of 128 images of 64×64 pixels and 32
// filters is 67 MB of it). What the layers keep for Backward (c's input,
// r's output) is the same, bit for bit, as from the two Forward calls. It
// returns r's output.
func Conv2DReLU(c *Conv2D, r *ReLU, x *tensor.Matrix) *tensor.Matrix {
	c.checkIn(x)
	c.x = x
	r.y.Resize(x.Rows, c.Out())
	c.parallel(x.Rows, func(w, lo, hi int) { c.forwardImages(w, lo, hi, r.y.Data, true) })
	return &r.y
}

// checkIn panics unless x has c's input columns.
func (c *Conv2D) checkIn(x *tensor.Matrix) {
	if x.Cols != c.In() {
		panic(fmt.Sprintf("nn: Conv2D on %d×%d×%d images given input with %d columns, want %d", c.H, c.W, c.Cin, x.Cols, c.In()))
	}
}

// forwardImages computes the output of images [lo, hi) into y (the whole
// batch's output) with worker w's buffers, chunk by chunk, rectifying
// each chunk after its product where relu.
func (c *Conv2D) forwardImages(w, lo, hi int, y []float32, relu bool) {
	s := &c.ws[w]
	hw, kk := c.H*c.W, c.K*c.K*c.Cin
	n := c.chunk()
	for b0 := lo; b0 < hi; b0 += n {
		nb := min(n, hi-b0)
		s.col.Resize(nb*hw, kk)
		c.im2colImages(c.x.Data[b0*c.In():(b0+nb)*c.In()], nb, s.col.Data)
		// The chunk's output rows (nb·H·W)×Cout are the images' NHWC rows.
		out := y[b0*c.Out() : (b0+nb)*c.Out()]
		s.view = tensor.Matrix{Rows: nb * hw, Cols: c.Cout, Data: out}
		tensor.MatMulBias(&s.view, &s.col, false, c.Weight, false, c.Bias.Data, nil)
		if relu {
			vec.Relu(out, out)
		}
	}
}

// Backward implements Layer: db = Σ dy over images and positions,
// dW = colᵀ·dy (col recomputed chunk by chunk; each worker sums its own
// images, then worker 1's sum is added to worker 0's), dx = col2im(dy·Wᵀ).
func (c *Conv2D) Backward(dy *tensor.Matrix) *tensor.Matrix {
	c.checkDy(dy)
	B := dy.Rows
	c.view = tensor.Matrix{Rows: B * c.H * c.W, Cols: c.Cout, Data: dy.Data}
	ColSums(c.dB.Data, &c.view)
	if !c.SkipInputGrad {
		c.dx.Resize(B, c.In())
	}
	c.ws[1].dW.Resize(c.dW.Rows, c.dW.Cols)
	for w := range c.ws {
		c.ws[w].first = true
	}
	c.parallel(B, func(w, lo, hi int) { c.backwardImages(w, lo, hi, dy) })
	if c.ws[0].first {
		c.dW.Zero() // B = 0: no image contributed
	}
	if !c.ws[1].first {
		for i, v := range c.ws[1].dW.Data {
			c.dW.Data[i] += v
		}
	}
	if c.SkipInputGrad {
		return nil
	}
	return &c.dx
}

// backwardImages accumulates images [lo, hi)'s weight gradient into
// worker w's sum (c.dW for worker 0) and writes their input gradient.
func (c *Conv2D) backwardImages(w, lo, hi int, dy *tensor.Matrix) {
	s := &c.ws[w]
	dW := c.dW
	if w == 1 {
		dW = &s.dW
	}
	hw, kk := c.H*c.W, c.K*c.K*c.Cin
	n := c.chunk()
	for b0 := lo; b0 < hi; b0 += n {
		nb := min(n, hi-b0)
		s.col.Resize(nb*hw, kk)
		c.im2colImages(c.x.Data[b0*c.In():(b0+nb)*c.In()], nb, s.col.Data)
		s.view = tensor.Matrix{Rows: nb * hw, Cols: c.Cout, Data: dy.Data[b0*c.Out() : (b0+nb)*c.Out()]}
		beta := float32(1)
		if s.first {
			beta, s.first = 0, false
		}
		tensor.MatMul(dW, &s.col, true, &s.view, false, 1, beta)
		if !c.SkipInputGrad {
			tensor.MatMul(&s.dcol, &s.view, false, c.Weight, true, 1, 0)
			c.col2imImages(s.dcol.Data, nb, c.dx.Data[b0*c.In():(b0+nb)*c.In()])
		}
	}
}

// InputGrad implements InputGrader: dx = col2im(dy·Wᵀ), leaving the
// parameter gradients alone.
func (c *Conv2D) InputGrad(dy *tensor.Matrix) *tensor.Matrix {
	c.checkDy(dy)
	c.dxAud.Resize(dy.Rows, c.In())
	c.parallel(dy.Rows, func(w, lo, hi int) {
		s := &c.ws[w]
		hw := c.H * c.W
		n := c.chunk()
		for b0 := lo; b0 < hi; b0 += n {
			nb := min(n, hi-b0)
			s.view = tensor.Matrix{Rows: nb * hw, Cols: c.Cout, Data: dy.Data[b0*c.Out() : (b0+nb)*c.Out()]}
			tensor.MatMul(&s.dcol, &s.view, false, c.Weight, true, 1, 0)
			c.col2imImages(s.dcol.Data, nb, c.dxAud.Data[b0*c.In():(b0+nb)*c.In()])
		}
	})
	return &c.dxAud
}

func (c *Conv2D) checkDy(dy *tensor.Matrix) {
	if c.x == nil || dy.Rows != c.x.Rows || dy.Cols != c.Out() {
		rows := 0
		if c.x != nil {
			rows = c.x.Rows
		}
		panic(fmt.Sprintf("nn: Conv2D %d×%d×%d→%d Backward given %d×%d gradient after a forward of %d rows (want %d columns)", c.H, c.W, c.Cin, c.Cout, dy.Rows, dy.Cols, rows, c.Out()))
	}
}

// im2colImages is im2col of nb images (x into col), their ranges on the
// cores where there are enough of them (spreadRows): each image's patches
// are its own rows of col.
func (c *Conv2D) im2colImages(x []float32, nb int, col []float32) {
	c.patchesByImages(true, x, nb, col)
}

// col2imImages is col2im of nb images (dcol into dx), their ranges on the
// cores as in im2colImages: each image's sums, in the same order, are its
// own.
func (c *Conv2D) col2imImages(dcol []float32, nb int, dx []float32) {
	c.patchesByImages(false, dx, nb, dcol)
}

// patchesByImages runs im2col (toCol: images into col) or col2im (col
// into images) over nb images, in ranges of images on the cores when
// spreadRows would cut them; the closure only then.
func (c *Conv2D) patchesByImages(toCol bool, images []float32, nb int, col []float32) {
	img, rows := c.In(), c.H*c.W*c.K*c.K*c.Cin
	if spreadRowParts(nb, rows) < 2 {
		if toCol {
			c.im2col(images, nb, col)
		} else {
			c.col2im(col, nb, images)
		}
		return
	}
	spreadRows(nb, rows, func(b0, b1 int) {
		if toCol {
			c.im2col(images[b0*img:b1*img], b1-b0, col[b0*rows:b1*rows])
		} else {
			c.col2im(col[b0*rows:b1*rows], b1-b0, images[b0*img:b1*img])
		}
	})
}

// im2col writes the patches of nb images (x, NHWC rows) into col, one
// row of K·K·Cin values per output position, zero outside the image.
// Each (kernel row, kernel column) contributes a run of Cin contiguous
// values, copied whole; a kernel row falling outside the image is one
// zeroed run of K·Cin values.
func (c *Conv2D) im2col(x []float32, nb int, col []float32) {
	H, W, C, K := c.H, c.W, c.Cin, c.K
	P := (K - 1) / 2
	kc := K * C
	kk := K * kc
	img := H * W * C
	for b := range nb {
		xi := x[b*img : (b+1)*img]
		for r := range H {
			for q := range W {
				dst := col[((b*H+r)*W+q)*kk:][:kk]
				for i := range K {
					rr := r + i - P
					seg := dst[i*kc : (i+1)*kc]
					if rr < 0 || rr >= H {
						clear(seg)
						continue
					}
					// Columns q−P … q−P+K−1 of image row rr; those inside
					// [0, W) are contiguous in x.
					lo, hi := q-P, q-P+K
					j0, j1 := max(0, -lo), K-max(0, hi-W)
					clear(seg[:j0*C])
					copy(seg[j0*C:j1*C], xi[(rr*W+lo+j0)*C:(rr*W+lo+j1)*C])
					clear(seg[j1*C:])
				}
			}
		}
	}
}

// col2im sets dx (nb images) to the sum, over the patches that contain
// each pixel, of the matching entries of dcol: the adjoint of im2col.
func (c *Conv2D) col2im(dcol []float32, nb int, dx []float32) {
	H, W, C, K := c.H, c.W, c.Cin, c.K
	P := (K - 1) / 2
	kc := K * C
	kk := K * kc
	img := H * W * C
	clear(dx[:nb*img])
	for b := range nb {
		xi := dx[b*img : (b+1)*img]
		for r := range H {
			for q := range W {
				src := dcol[((b*H+r)*W+q)*kk:][:kk]
				for i := range K {
					rr := r + i - P
					if rr < 0 || rr >= H {
						continue
					}
					lo, hi := q-P, q-P+K
					j0, j1 := max(0, -lo), K-max(0, hi-W)
					s := src[i*kc+j0*C : i*kc+j1*C]
					d := xi[(rr*W+lo+j0)*C : (rr*W+lo+j1)*C]
					vec.Add(d, s)
				}
			}
		}
	}
}
