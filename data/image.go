package data

import (
	"fmt"
	"image"
	"runtime"
	"slices"

	"golang.org/x/image/draw"
)

// ImageOptions says how [LoadFashionMNIST] and [LoadISIC] read, select and
// shape images. The zero value keeps each set's native resolution and
// its defaults (see the fields).
type ImageOptions struct {
	// PositiveClass is the Fashion-MNIST class (0…9) whose images are
	// labelled 1; every other class is 0. ISIC ignores it (malignant is
	// positive).
	PositiveClass int
	// PosRate, if in (0, 1), subsamples the positives of each
	// Fashion-MNIST split so that they make up this fraction of it: every
	// negative is kept and positives are chosen by a keyed hash of (Seed,
	// ID). 0 keeps the natural rate; a rate above the natural one keeps
	// every positive.
	PosRate float64
	// Size is the side of the square images produced: 0 means the set's
	// own (28 for Fashion-MNIST, 84 for ISIC, as in SPEC §6). Images of
	// another size are resized with a Catmull-Rom (cubic) kernel.
	Size int
	// Pad makes a Fashion-MNIST image smaller than Size centred on a
	// black (zero) canvas instead of being scaled up.
	Pad bool
	// Channels is 1 (grey) or 3 (RGB); 0 means the set's own (1 for
	// Fashion-MNIST, 3 for ISIC). Grey images are replicated into 3
	// channels; colour images are reduced to grey by luma (ITU-R BT.601).
	Channels int
	// Seed keys every random choice (subsampling, rebalancing, the split).
	Seed uint64
	// NegPerPos is how many negatives ISIC keeps per positive (0 means the
	// paper's 9, i.e. 10% positives); negative keeps every negative.
	NegPerPos int
	// TestFrac is the fraction of the kept ISIC images held out for test
	// (0 means 0.2; negative means no test split). Fashion-MNIST uses its
	// own train and test files instead.
	TestFrac float64
	// CacheDir is where ISIC's decoded-image cache lives ("" means the
	// image folder itself); NoCache disables the cache.
	CacheDir string
	NoCache  bool
	// Workers is the number of images decoded in parallel (0 means
	// GOMAXPROCS).
	Workers int
}

// Image set formats: the values of a run's format that [LoadFashionMNIST]
// and [LoadISIC] read (the table formats are in options.go).
const (
	FormatFashionMNIST = "fashion-mnist"
	FormatISIC         = "isic"
)

// IsImageFormat reports whether format names an image set rather than a
// table.
func IsImageFormat(format string) bool {
	return format == FormatFashionMNIST || format == FormatISIC
}

// Defaults of [ImageOptions].
const (
	FashionSize                = 28
	ISICSize                   = 84
	DefaultNegPerPos           = 9
	DefaultISICTestFrac        = 0.2
	fashionClasses             = 10
	maxImageSide               = 4096
	imagePosKey         uint64 = 0x494d47504f530003 // "IMGPOS": which positives survive PosRate
	imageNegKey         uint64 = 0x494d474e45470004 // "IMGNEG": which negatives ISIC keeps
)

// resolve fills defaults for a set whose native side and channel count
// are given and checks the options.
func (o ImageOptions) resolve(what string, size, channels int) (ImageOptions, error) {
	if o.Size == 0 {
		o.Size = size
	}
	if o.Channels == 0 {
		o.Channels = channels
	}
	if o.Size < 1 || o.Size > maxImageSide {
		return o, fmt.Errorf("%s: image size %d outside [1, %d]", what, o.Size, maxImageSide)
	}
	if o.Channels != 1 && o.Channels != 3 {
		return o, fmt.Errorf("%s: %d channels; want 1 (grey) or 3 (RGB)", what, o.Channels)
	}
	if !(o.PosRate >= 0 && o.PosRate < 1) {
		return o, fmt.Errorf("%s: positive rate %v outside [0, 1)", what, o.PosRate)
	}
	if o.NegPerPos == 0 {
		o.NegPerPos = DefaultNegPerPos
	}
	if o.TestFrac == 0 {
		o.TestFrac = DefaultISICTestFrac
	}
	if o.TestFrac >= 1 || o.TestFrac != o.TestFrac {
		return o, fmt.Errorf("%s: test fraction %v outside [0, 1)", what, o.TestFrac)
	}
	if o.TestFrac < 0 {
		o.TestFrac = 0
	}
	if o.Workers <= 0 {
		o.Workers = runtime.GOMAXPROCS(0)
	}
	return o, nil
}

// byHash returns the indices of ids ordered by the keyed hash of (seed,
// key, id): taking a prefix of it is a seeded random choice that any
// party holding the same IDs reproduces.
func byHash(ids []uint64, idx []int, seed, key uint64) []int {
	out := slices.Clone(idx)
	h := make(map[int]float64, len(out))
	for _, i := range out {
		h[i] = unitHash(seed, key, ids[i])
	}
	slices.SortFunc(out, func(a, b int) int {
		if c := cmpFloat(h[a], h[b]); c != 0 {
			return c
		}
		return cmpU64(ids[a], ids[b])
	})
	return out
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func cmpU64(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// imagePart builds a Dataset from 8-bit pixels (n images of s·s·c bytes,
// in order), scaling them to [0, 1].
func imagePart(ids []uint64, labels []uint8, pix []byte, s, c int) *Dataset {
	n := len(ids)
	w := s * s * c
	dense := make([]float32, n*w)
	for i, b := range pix[:n*w] {
		dense[i] = float32(b) / 255
	}
	return &Dataset{
		IDs:    ids,
		Labels: labels,
		X: &Features{
			Rows: n, NumDense: w, Dense: dense,
			Image: &ImageShape{Height: s, Width: s, Channels: c},
		},
	}
}

func countPos(labels []uint8) int {
	n := 0
	for _, l := range labels {
		n += int(l)
	}
	return n
}

// rgbScaler turns decoded images of any size and colour model into s×s
// 8-bit pixels with c channels, reusing its canvas.
type rgbScaler struct {
	s, c int
	dst  *image.RGBA
}

func newRGBScaler(s, c int) *rgbScaler {
	return &rgbScaler{s: s, c: c, dst: image.NewRGBA(image.Rect(0, 0, s, s))}
}

// scale writes src, resized to s×s with the Catmull-Rom kernel (copied
// when already s×s), into out (s·s·c bytes, channel fastest).
func (r *rgbScaler) scale(src image.Image, out []byte) {
	b := src.Bounds()
	if b.Dx() == r.s && b.Dy() == r.s {
		draw.Draw(r.dst, r.dst.Bounds(), src, b.Min, draw.Src)
	} else {
		draw.CatmullRom.Scale(r.dst, r.dst.Bounds(), src, b, draw.Src, nil)
	}
	pix := r.dst.Pix
	n := r.s * r.s
	out = out[:n*r.c]
	if r.c == 3 {
		for p := range n {
			out[3*p], out[3*p+1], out[3*p+2] = pix[4*p], pix[4*p+1], pix[4*p+2]
		}
		return
	}
	for p := range n {
		out[p] = luma(pix[4*p], pix[4*p+1], pix[4*p+2])
	}
}

// luma is BT.601 luma, rounded: 0.299 R + 0.587 G + 0.114 B.
func luma(r, g, b uint8) uint8 {
	return uint8((299*uint32(r) + 587*uint32(g) + 114*uint32(b) + 500) / 1000)
}
