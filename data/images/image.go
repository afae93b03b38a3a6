// Package images reads the image sets the project reproduces papers on —
// Fashion-MNIST (IDX files) and ISIC 2020 (JPEG/PNG lesion folders) — and
// registers them with package data, as image/png registers PNG with
// package image. Import it for its side effect wherever image sets are
// loaded:
//
//	import _ "github.com/splitguard/splitguard/data/images"
//
// Then data.LoadImages (and config.LoadData) read the formats
// "fashion-mnist" and "isic". Packages that only train (model, the
// parties) never link an image decoder.
package images

import (
	"cmp"
	"fmt"
	"image"
	"runtime"
	"slices"

	"golang.org/x/image/draw"

	"github.com/splitguard/splitguard/data"
)

// The image sets the project reproduces papers on, as a run's format (key
// format) names them.
const (
	FormatFashionMNIST = "fashion-mnist"
	FormatISIC         = "isic"
)

// FashionMNISTDir is where Debian's dataset-fashion-mnist package installs
// the gzipped IDX files: the folder fashion-mnist reads by default.
const FashionMNISTDir = "/usr/share/datasets/fashion-mnist"

// Native sides and defaults of the sets (METHODS §6).
const (
	FashionSize         = 28
	ISICSize            = 84
	DefaultNegPerPos    = 9
	DefaultISICTestFrac = 0.2
)

func init() {
	data.RegisterImageFormat(data.ImageFormat{Name: FormatFashionMNIST, Size: FashionSize, Channels: 1, Read: LoadFashionMNIST,
		Dir: FashionMNISTDir, TestFiles: true, Classes: fashionClasses, Options: map[string]float64{"pos_rate": 0, "image_pad": 0}})
	data.RegisterImageFormat(data.ImageFormat{Name: FormatISIC, Size: ISICSize, Channels: 3, Read: LoadISIC,
		TestFrac: DefaultISICTestFrac, Options: map[string]float64{"neg_per_pos": DefaultNegPerPos}})
}

// Limits and hash keys of the readers.
const (
	fashionClasses        = 10
	maxImageSide          = 4096
	imagePosKey    uint64 = 0x494d47504f530003 // "IMGPOS": which positives survive PosRate
	imageNegKey    uint64 = 0x494d474e45470004 // "IMGNEG": which negatives ISIC keeps
)

// resolve fills defaults for a set whose native side and channel count
// are given and checks the options.
func resolve(o data.ImageOptions, what string, size, channels int) (data.ImageOptions, error) {
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
		h[i] = data.UnitHash(seed, key, ids[i])
	}
	slices.SortFunc(out, func(a, b int) int {
		if c := cmp.Compare(h[a], h[b]); c != 0 {
			return c
		}
		return cmp.Compare(ids[a], ids[b])
	})
	return out
}

// imagePart builds a Dataset from 8-bit pixels (n images of s·s·c bytes,
// in order), scaling them to [0, 1].
func imagePart(ids []uint64, labels []uint8, pix []byte, s, c int) *data.Dataset {
	n := len(ids)
	w := s * s * c
	dense := make([]float32, n*w)
	for i, b := range pix[:n*w] {
		dense[i] = float32(b) / 255
	}
	return &data.Dataset{
		IDs:    ids,
		Labels: labels,
		X: &data.Features{
			Rows: n, NumDense: w, Dense: dense,
			Image: &data.ImageShape{Height: s, Width: s, Channels: c},
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
