package images

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"image"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/splitguard/splitguard/data"
)

// IDX magic numbers: two zero bytes, the element type (0x08 = unsigned
// byte) and the number of dimensions.
const (
	idxImagesMagic = 0x00000803
	idxLabelsMagic = 0x00000801
)

// LoadFashionMNIST reads Fashion-MNIST from dir: the four IDX files
// train-images-idx3-ubyte, train-labels-idx1-ubyte, t10k-images-idx3-ubyte
// and t10k-labels-idx1-ubyte, each plain or gzipped (with a .gz suffix).
// Headers are checked strictly (magic number, dimensions, exact file
// length, matching image and label counts, labels 0…9).
//
// The files' own train and test sets are the split. Class
// o.PositiveClass is labelled 1, the others 0; o.PosRate optionally
// subsamples positives (see [ImageOptions]). Images become o.Size square
// (28 by default; resized with a cubic kernel, or centred on a zero
// canvas with o.Pad) with o.Channels channels (1 by default; 3 replicates
// the grey value), scaled to [0, 1].
//
// Example IDs are the row numbers: training image i has ID i
// (0…59999 for the real files) and test image i has ID Ntrain+i
// (60000… for the real files). Memory: 70,000 images at 84×84×3 take
// 5.9 GB of float32; the native 28×28×1 takes 220 MB.
func LoadFashionMNIST(dir string, o data.ImageOptions) (*data.Split, error) {
	o, err := resolve(o, FormatFashionMNIST, FashionSize, 1)
	if err != nil {
		return nil, err
	}
	if o.PositiveClass < 0 || o.PositiveClass >= fashionClasses {
		return nil, fmt.Errorf("fashion-mnist: positive class %d outside [0, %d]", o.PositiveClass, fashionClasses-1)
	}
	trX, h, w, err := readIDXImages(dir, "train-images-idx3-ubyte")
	if err != nil {
		return nil, err
	}
	trY, err := readIDXLabels(dir, "train-labels-idx1-ubyte", len(trX)/(h*w))
	if err != nil {
		return nil, err
	}
	teX, h2, w2, err := readIDXImages(dir, "t10k-images-idx3-ubyte")
	if err != nil {
		return nil, err
	}
	if h2 != h || w2 != w {
		return nil, fmt.Errorf("fashion-mnist: %s: test images are %d×%d, training images %d×%d", dir, h2, w2, h, w)
	}
	teY, err := readIDXLabels(dir, "t10k-labels-idx1-ubyte", len(teX)/(h*w))
	if err != nil {
		return nil, err
	}
	nTrain := len(trY)
	sh := &fashionShaper{h: h, w: w, o: o}
	train := sh.part(trX, trY, 0, imagePosKey)
	test := sh.part(teX, teY, uint64(nTrain), imagePosKey)
	if train.X.Rows == 0 {
		return nil, fmt.Errorf("fashion-mnist: %s: no training images", dir)
	}
	tp, sp := countPos(train.Labels), countPos(test.Labels)
	if tp == 0 || tp == train.X.Rows {
		return nil, fmt.Errorf("fashion-mnist: %s: the training split has only one class (%d rows, %d positives of class %d)", dir, train.X.Rows, tp, o.PositiveClass)
	}
	read := nTrain + len(teY)
	kept := train.X.Rows + test.X.Rows
	return &data.Split{Train: train, Test: test, Info: data.Info{
		Path: dir, Format: FormatFashionMNIST,
		RowsRead: int64(read), RowsKept: int64(kept),
		Bytes:     int64(len(trX) + len(teX) + nTrain + len(teY)),
		Train:     data.PartInfo{Rows: train.X.Rows, Positives: tp},
		Test:      data.PartInfo{Rows: test.X.Rows, Positives: sp},
		HasLabels: true,
		Sample:    float64(kept) / float64(read),
		TestFrac:  float64(test.X.Rows) / float64(kept),
		Seed:      o.Seed,
	}}, nil
}

// fashionShaper selects and shapes one split's images.
type fashionShaper struct {
	h, w int
	o    data.ImageOptions
}

// part labels, subsamples and shapes n = len(y) images whose IDs are
// first, first+1, ….
func (f *fashionShaper) part(x, y []byte, first uint64, key uint64) *data.Dataset {
	o := f.o
	n := len(y)
	ids := make([]uint64, n)
	var pos, neg []int
	for i, c := range y {
		ids[i] = first + uint64(i)
		if int(c) == o.PositiveClass {
			pos = append(pos, i)
		} else {
			neg = append(neg, i)
		}
	}
	keep := make([]bool, n)
	for _, i := range neg {
		keep[i] = true
	}
	nPos := len(pos)
	if o.PosRate > 0 {
		// p/(p+neg) = rate  ⇔  p = rate·neg/(1−rate), rounded.
		want := int(o.PosRate*float64(len(neg))/(1-o.PosRate) + 0.5)
		nPos = min(nPos, want)
	}
	for _, i := range byHash(ids, pos, o.Seed, key)[:nPos] {
		keep[i] = true
	}
	var keptIDs []uint64
	var labels []uint8
	for i := range n {
		if keep[i] {
			keptIDs = append(keptIDs, ids[i])
			labels = append(labels, b2u8(int(y[i]) == o.PositiveClass))
		}
	}
	s, c := o.Size, o.Channels
	out := make([]byte, len(keptIDs)*s*s*c)
	k := 0
	grey := image.NewGray(image.Rect(0, 0, s, s))
	src := &image.Gray{Stride: f.w, Rect: image.Rect(0, 0, f.w, f.h)}
	sc := newRGBScaler(s, 1)
	for i := range n {
		if !keep[i] {
			continue
		}
		img := x[i*f.h*f.w : (i+1)*f.h*f.w]
		dst := out[k*s*s*c : (k+1)*s*s*c]
		k++
		var g []byte // s×s grey pixels
		switch {
		case s == f.w && s == f.h:
			g = img
		case o.Pad && s >= f.w && s >= f.h:
			clear(grey.Pix)
			r0, c0 := (s-f.h)/2, (s-f.w)/2
			for r := range f.h {
				copy(grey.Pix[(r0+r)*s+c0:], img[r*f.w:(r+1)*f.w])
			}
			g = grey.Pix
		default:
			src.Pix = img
			sc.scale(src, grey.Pix) // grey in, so luma returns the grey value
			g = grey.Pix
		}
		if c == 1 {
			copy(dst, g)
			continue
		}
		for p, v := range g[:s*s] {
			dst[3*p], dst[3*p+1], dst[3*p+2] = v, v, v
		}
	}
	return imagePart(keptIDs, labels, out, s, c)
}

func b2u8(b bool) uint8 {
	if b {
		return 1
	}
	return 0
}

// MaxIDXBytes is the most data bytes one IDX file may hold (256 MiB,
// five times Fashion-MNIST's 47 MB training images). A header declaring
// more is refused before any data is read, so a small gzipped file cannot
// make the reader hold gigabytes; within the limit the data buffer grows
// with the bytes actually read, so a file shorter than its header fails
// after holding no more than it has.
const MaxIDXBytes = 256 << 20

// readIDX reads one IDX file (name or name.gz in dir) whose magic must be
// want, and returns its dimensions and data; the data must fill the file
// exactly. A gzipped file is decompressed as it is read, never beyond the
// size its header declares (a few kilobytes cannot make gigabytes).
func readIDX(dir, name string, want uint32) (string, []int, []byte, error) {
	path := filepath.Join(dir, name)
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		path += ".gz"
		f, err = os.Open(path)
		if errors.Is(err, fs.ErrNotExist) {
			return path, nil, nil, fmt.Errorf("fashion-mnist: neither %s nor %s exists", filepath.Join(dir, name), path)
		}
	}
	if err != nil {
		return path, nil, nil, fmt.Errorf("fashion-mnist: %w", err)
	}
	defer f.Close()
	dims, body, err := decodeIDX(bufio.NewReader(f), want)
	if err != nil {
		return path, nil, nil, fmt.Errorf("fashion-mnist: %s: %w", path, err)
	}
	return path, dims, body, nil
}

// decodeIDX reads an IDX file, plain or gzipped, from r: its magic must
// be want; it returns the dimensions and the data, which must fill the
// file exactly.
func decodeIDX(r *bufio.Reader, want uint32) ([]int, []byte, error) {
	var in io.Reader = r
	if magic, _ := r.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(r)
		if err != nil {
			return nil, nil, err
		}
		in = zr
	}
	var hdr [4]byte
	if n, err := io.ReadFull(in, hdr[:]); err != nil {
		return nil, nil, fmt.Errorf("%d bytes, too short for an IDX header: %w", n, err)
	}
	magic := binary.BigEndian.Uint32(hdr[:])
	if magic != want {
		return nil, nil, fmt.Errorf("IDX magic number %#08x, want %#08x (unsigned bytes, %d dimensions)", magic, want, want&0xff)
	}
	nd := int(magic & 0xff)
	dims := make([]int, nd)
	size := uint64(1)
	for i := range dims {
		if _, err := io.ReadFull(in, hdr[:]); err != nil {
			return nil, nil, fmt.Errorf("header truncated (dimension %d of %d): %w", i, nd, err)
		}
		d := binary.BigEndian.Uint32(hdr[:])
		if d == 0 || d > 1<<24 {
			return nil, nil, fmt.Errorf("dimension %d is %d", i, d)
		}
		dims[i] = int(d)
		size *= uint64(d)
		if size > MaxIDXBytes {
			return nil, nil, fmt.Errorf("the header's dimensions %v declare more than %d bytes, the most an IDX file may hold", dims[:i+1], MaxIDXBytes)
		}
	}
	// The buffer grows with the data actually read, so a header that
	// declares more than the file holds allocates no more than the file.
	var body bytes.Buffer
	n, err := io.Copy(&body, io.LimitReader(in, int64(size)))
	if err != nil {
		return nil, nil, fmt.Errorf("reading the data: %w", err)
	}
	if uint64(n) != size {
		return nil, nil, fmt.Errorf("%d data bytes, the header's dimensions %v need %d", n, dims, size)
	}
	var one [1]byte
	if k, _ := io.ReadFull(in, one[:]); k != 0 {
		return nil, nil, fmt.Errorf("more than %d data bytes, the header's dimensions %v need %d", size, dims, size)
	}
	return dims, body.Bytes(), nil
}

// readIDXImages reads an N×H×W unsigned-byte image file.
func readIDXImages(dir, name string) ([]byte, int, int, error) {
	path, dims, body, err := readIDX(dir, name, idxImagesMagic)
	if err != nil {
		return nil, 0, 0, err
	}
	h, w := dims[1], dims[2]
	if h > maxImageSide || w > maxImageSide {
		return nil, 0, 0, fmt.Errorf("fashion-mnist: %s: images of %d×%d", path, h, w)
	}
	return body, h, w, nil
}

// readIDXLabels reads an N unsigned-byte label file, checking N and that
// every label is a Fashion-MNIST class.
func readIDXLabels(dir, name string, n int) ([]byte, error) {
	path, dims, body, err := readIDX(dir, name, idxLabelsMagic)
	if err != nil {
		return nil, err
	}
	if dims[0] != n {
		return nil, fmt.Errorf("fashion-mnist: %s: %d labels for %d images", path, dims[0], n)
	}
	for i, c := range body {
		if c >= fashionClasses {
			return nil, fmt.Errorf("fashion-mnist: %s: label %d of item %d outside [0, %d]", path, c, i, fashionClasses-1)
		}
	}
	return body, nil
}
