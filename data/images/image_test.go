package images

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/splitguard/splitguard/data"
)

// idxBytes encodes an unsigned-byte IDX file.
func idxBytes(dims []int, body []byte) []byte {
	b := binary.BigEndian.AppendUint32(nil, 0x0800|uint32(len(dims)))
	for _, d := range dims {
		b = binary.BigEndian.AppendUint32(b, uint32(d))
	}
	return append(b, body...)
}

func gz(b []byte) []byte {
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	w.Write(b)
	w.Close()
	return buf.Bytes()
}

// fixturePixel is the value of pixel p of image i in the IDX fixtures.
func fixturePixel(i, p int) byte { return byte((i*7 + p*13) % 256) }

// writeFashion writes nTrain and nTest side×side images labelled i%10,
// the training files gzipped and the test files plain.
func writeFashion(t *testing.T, dir string, nTrain, nTest, side int) {
	t.Helper()
	for _, part := range []struct {
		prefix string
		n      int
		gzip   bool
	}{{"train", nTrain, true}, {"t10k", nTest, false}} {
		img := make([]byte, part.n*side*side)
		lab := make([]byte, part.n)
		for i := range part.n {
			lab[i] = byte(i % 10)
			for p := range side * side {
				img[i*side*side+p] = fixturePixel(i, p)
			}
		}
		files := map[string][]byte{
			part.prefix + "-images-idx3-ubyte": idxBytes([]int{part.n, side, side}, img),
			part.prefix + "-labels-idx1-ubyte": idxBytes([]int{part.n}, lab),
		}
		for name, b := range files {
			if part.gzip {
				name, b = name+".gz", gz(b)
			}
			if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func TestFashionMNISTFixtures(t *testing.T) {
	dir := t.TempDir()
	writeFashion(t, dir, 200, 50, 4)
	for _, tc := range []struct {
		name                      string
		o                         data.ImageOptions
		trainRows, trainPos, side int
		channels, testRows        int
		pixel                     func(img, r, c, ch int) float64 // expected value; img is the file index
	}{
		{"native 4x4 grey", data.ImageOptions{Size: 4, PositiveClass: 3}, 200, 20, 4, 1, 50,
			func(i, r, c, _ int) float64 { return float64(fixturePixel(i, r*4+c)) / 255 }},
		{"padded to 8x8, RGB", data.ImageOptions{Size: 8, Pad: true, Channels: 3, PositiveClass: 3}, 200, 20, 8, 3, 50,
			func(i, r, c, _ int) float64 {
				if r < 2 || r >= 6 || c < 2 || c >= 6 {
					return 0
				}
				return float64(fixturePixel(i, (r-2)*4+c-2)) / 255
			}},
		// 20 positives of 200; rate 0.05 over 180 negatives keeps
		// round(0.05·180/0.95) = round(9.47) = 9; the test split (5 of 50)
		// keeps round(0.05·45/0.95) = round(2.37) = 2.
		{"positive rate 5%", data.ImageOptions{Size: 4, PositiveClass: 3, PosRate: 0.05, Seed: 7}, 189, 9, 4, 1, 47, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := LoadFashionMNIST(dir, tc.o)
			if err != nil {
				t.Fatal(err)
			}
			tr, te := s.Train, s.Test
			if tr.X.Rows != tc.trainRows || countPos(tr.Labels) != tc.trainPos || te.X.Rows != tc.testRows {
				t.Fatalf("train %d rows (%d positive), test %d; want %d (%d), %d", tr.X.Rows, countPos(tr.Labels), te.X.Rows, tc.trainRows, tc.trainPos, tc.testRows)
			}
			if s.Info.Train.Rows != tr.X.Rows || s.Info.Train.Positives != tc.trainPos || s.Info.RowsRead != 250 || s.Info.Format != "fashion-mnist" {
				t.Fatalf("Info %+v", s.Info)
			}
			if sh := tr.X.Image; sh == nil || sh.Height != tc.side || sh.Width != tc.side || sh.Channels != tc.channels || tr.X.NumDense != tc.side*tc.side*tc.channels {
				t.Fatalf("image shape %+v, NumDense %d", tr.X.Image, tr.X.NumDense)
			}
			if err := tr.X.Validate(); err != nil {
				t.Fatal(err)
			}
			for k, id := range te.IDs {
				if id < 200 || id >= 250 {
					t.Fatalf("test row %d has ID %d, want 200+i", k, id)
				}
			}
			for k, id := range tr.IDs {
				want := uint8(0)
				if id%10 == 3 {
					want = 1
				}
				if tr.Labels[k] != want {
					t.Fatalf("train ID %d (class %d) labelled %d", id, id%10, tr.Labels[k])
				}
				if tc.pixel == nil {
					continue
				}
				row := tr.X.Dense[k*tr.X.NumDense : (k+1)*tr.X.NumDense]
				for r := range tc.side {
					for c := range tc.side {
						for ch := range tc.channels {
							got := float64(row[(r*tc.side+c)*tc.channels+ch])
							if w := tc.pixel(int(id), r, c, ch); math.Abs(got-w) > 1e-7 {
								t.Fatalf("ID %d pixel (%d,%d,%d) = %v, want %v", id, r, c, ch, got, w)
							}
						}
					}
				}
			}
		})
	}
}

func TestFashionMNISTResizeConstant(t *testing.T) {
	dir := t.TempDir()
	// Constant images resize to the same constant whatever the kernel.
	n, side := 20, 6
	img := make([]byte, n*side*side)
	lab := make([]byte, n)
	for i := range n {
		lab[i] = byte(i % 10)
		for p := range side * side {
			img[i*side*side+p] = byte(10 * i)
		}
	}
	for _, p := range []string{"train", "t10k"} {
		os.WriteFile(filepath.Join(dir, p+"-images-idx3-ubyte"), idxBytes([]int{n, side, side}, img), 0o644)
		os.WriteFile(filepath.Join(dir, p+"-labels-idx1-ubyte"), idxBytes([]int{n}, lab), 0o644)
	}
	for _, size := range []int{3, 15} {
		s, err := LoadFashionMNIST(dir, data.ImageOptions{Size: size, PositiveClass: 1})
		if err != nil {
			t.Fatal(err)
		}
		for k, id := range s.Train.IDs {
			want := float32(10*id) / 255
			for _, v := range s.Train.X.Dense[k*size*size : (k+1)*size*size] {
				if math.Abs(float64(v-want)) > 1.0/255+1e-6 {
					t.Fatalf("size %d, ID %d: pixel %v, want %v", size, id, v, want)
				}
			}
		}
	}
}

func TestFashionMNISTBadFiles(t *testing.T) {
	good := func(dir string) { writeFashion(t, dir, 20, 10, 4) }
	plainImages := func(n int) []byte { return idxBytes([]int{n, 4, 4}, make([]byte, n*16)) }
	for _, tc := range []struct {
		name  string
		file  string
		data  []byte
		wants []string
	}{
		{"bad magic", "t10k-images-idx3-ubyte", append([]byte{0, 0, 9, 3}, plainImages(10)[4:]...), []string{"t10k-images-idx3-ubyte", "magic"}},
		{"labels as images", "t10k-images-idx3-ubyte", idxBytes([]int{10}, make([]byte, 10)), []string{"t10k-images-idx3-ubyte", "magic"}},
		{"extra bytes", "t10k-images-idx3-ubyte", append(plainImages(10), 0), []string{"t10k-images-idx3-ubyte", "more than 160 data bytes", "need 160"}},
		{"truncated header", "t10k-labels-idx1-ubyte", []byte{0, 0, 8, 1, 0}, []string{"t10k-labels-idx1-ubyte", "truncated"}},
		{"count mismatch", "t10k-labels-idx1-ubyte", idxBytes([]int{9}, make([]byte, 9)), []string{"t10k-labels-idx1-ubyte", "9 labels for 10 images"}},
		{"label 10", "t10k-labels-idx1-ubyte", idxBytes([]int{10}, []byte{0, 1, 2, 10, 0, 0, 0, 0, 0, 0}), []string{"t10k-labels-idx1-ubyte", "label 10 of item 3"}},
		{"missing", "t10k-labels-idx1-ubyte", nil, []string{"neither", "t10k-labels-idx1-ubyte.gz"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			good(dir)
			p := filepath.Join(dir, tc.file)
			if tc.data == nil {
				os.Remove(p)
			} else if err := os.WriteFile(p, tc.data, 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := LoadFashionMNIST(dir, data.ImageOptions{Size: 4})
			for _, w := range tc.wants {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Fatalf("error %v, want one containing %q", err, w)
				}
			}
		})
	}
	dir := t.TempDir()
	good(dir)
	for _, o := range []data.ImageOptions{{PositiveClass: 10}, {Channels: 2}, {PosRate: 1}, {Size: -1}} {
		if _, err := LoadFashionMNIST(dir, o); err == nil {
			t.Errorf("options %+v accepted", o)
		}
	}
}

// TestFashionMNISTReal loads Debian's dataset-fashion-mnist when it is
// installed.
func TestFashionMNISTReal(t *testing.T) {
	if _, err := os.Stat(filepath.Join(FashionMNISTDir, "train-images-idx3-ubyte.gz")); err != nil {
		t.Skipf("%s not installed (apt-get install dataset-fashion-mnist)", FashionMNISTDir)
	}
	if testing.Short() {
		t.Skip("reads 30 MB of gzip")
	}
	s, err := LoadFashionMNIST(FashionMNISTDir, data.ImageOptions{PositiveClass: 1, PosRate: 0.05, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	// Every class has 6000 training and 1000 test images. At 5%:
	// round(0.05·54000/0.95) = 2842 and round(0.05·9000/0.95) = 474.
	if s.Train.X.Rows != 54000+2842 || countPos(s.Train.Labels) != 2842 || s.Test.X.Rows != 9000+474 || countPos(s.Test.Labels) != 474 {
		t.Fatalf("train %d (%d positive), test %d (%d positive)", s.Train.X.Rows, countPos(s.Train.Labels), s.Test.X.Rows, countPos(s.Test.Labels))
	}
	if s.Test.IDs[0] != 60000 || s.Train.X.NumDense != 784 {
		t.Fatalf("first test ID %d, width %d", s.Test.IDs[0], s.Train.X.NumDense)
	}
	var mean float64
	for _, v := range s.Train.X.Dense {
		mean += float64(v)
	}
	mean /= float64(len(s.Train.X.Dense))
	// Fashion-MNIST's published training mean is 0.2860 (72.94/255).
	if math.Abs(mean-0.286) > 0.01 {
		t.Fatalf("mean pixel %v, want about 0.286", mean)
	}
}

// lesion draws a side×side skin-coloured image; malignant ones get a dark
// blob, benign ones a faint one. The colour varies with i.
func lesion(i, w, h int, malignant bool) *image.RGBA {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	skin := color.RGBA{uint8(200 + i%8), uint8(150 + i%6), uint8(120 + i%4), 255}
	blob := color.RGBA{170, 130, 110, 255}
	if malignant {
		blob = color.RGBA{40, 20, 15, 255}
	}
	cx, cy, r := w/2+i%3-1, h/2+i%5-2, float64(min(w, h))/3
	for y := range h {
		for x := range w {
			if math.Hypot(float64(x-cx), float64(y-cy)) < r {
				img.SetRGBA(x, y, blob)
			} else {
				img.SetRGBA(x, y, skin)
			}
		}
	}
	return img
}

func writeImage(t *testing.T, path string, img image.Image) {
	t.Helper()
	var buf bytes.Buffer
	var err error
	if strings.HasSuffix(path, ".png") {
		err = png.Encode(&buf, img)
	} else {
		err = jpeg.Encode(&buf, img, &jpeg.Options{Quality: 90})
	}
	if err == nil {
		err = os.WriteFile(path, buf.Bytes(), 0o644)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// writeISICFolders makes nPos malignant and nNeg benign PNGs.
func writeISICFolders(t *testing.T, dir string, nPos, nNeg int) {
	t.Helper()
	for _, c := range []struct {
		sub string
		n   int
	}{{"malignant", nPos}, {"benign", nNeg}} {
		os.MkdirAll(filepath.Join(dir, c.sub), 0o755)
		for i := range c.n {
			writeImage(t, filepath.Join(dir, c.sub, fmt.Sprintf("%s_%04d.png", c.sub[:1], i)), lesion(i, 24, 20, c.sub == "malignant"))
		}
	}
	os.WriteFile(filepath.Join(dir, "benign", "README.txt"), []byte("not an image"), 0o644)
}

func meanOf(v []float32) float64 {
	var s float64
	for _, x := range v {
		s += float64(x)
	}
	return s / float64(len(v))
}

func TestISICFolders(t *testing.T) {
	dir := t.TempDir()
	writeISICFolders(t, dir, 20, 280)
	before := isicDecodes.Load()
	s, err := LoadISIC(dir, data.ImageOptions{Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	// 20 positives + 9·20 negatives = 200 kept; test = round(0.2·200).
	tr, te := s.Train, s.Test
	if s.Info.RowsRead != 300 || s.Info.RowsKept != 200 || tr.X.Rows != 160 || te.X.Rows != 40 {
		t.Fatalf("read %d, kept %d, train %d, test %d; want 300, 200, 160, 40", s.Info.RowsRead, s.Info.RowsKept, tr.X.Rows, te.X.Rows)
	}
	if p := countPos(tr.Labels) + countPos(te.Labels); p != 20 || s.Info.Train.Positives+s.Info.Test.Positives != 20 {
		t.Fatalf("%d positives kept, want all 20", p)
	}
	if got := isicDecodes.Load() - before; got != 200 {
		t.Fatalf("%d images decoded, want only the 200 kept", got)
	}
	if sh := tr.X.Image; *sh != (data.ImageShape{Height: 84, Width: 84, Channels: 3}) || tr.X.NumDense != 84*84*3 {
		t.Fatalf("shape %+v", *sh)
	}
	seen := map[uint64]bool{}
	var malMean, benMean []float64
	for _, ds := range []*data.Dataset{tr, te} {
		for k, id := range ds.IDs {
			if seen[id] {
				t.Fatalf("ID %d twice", id)
			}
			seen[id] = true
			row := ds.X.Dense[k*ds.X.NumDense : (k+1)*ds.X.NumDense]
			for _, v := range row {
				if !(v >= 0 && v <= 1) {
					t.Fatalf("pixel %v outside [0, 1]", v)
				}
			}
			if ds.Labels[k] == 1 {
				malMean = append(malMean, meanOf(row))
			} else {
				benMean = append(benMean, meanOf(row))
			}
		}
	}
	// The dark blob makes every malignant image darker than every benign.
	for _, m := range malMean {
		for _, b := range benMean {
			if m >= b {
				t.Fatalf("a malignant image (mean %v) is not darker than a benign one (%v)", m, b)
			}
		}
	}
	if !seen[data.HashID("m_0007")] || !seen[data.HashID("m_0019")] {
		t.Fatal("IDs are not HashID of the image names")
	}
	if _, err := os.Stat(filepath.Join(dir, ".splitguard-cache-84x84x3.bin")); err != nil {
		t.Fatalf("no cache file: %v", err)
	}

	// A second load reads the cache: same data, no decoding.
	before = isicDecodes.Load()
	s2, err := LoadISIC(dir, data.ImageOptions{Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	if n := isicDecodes.Load() - before; n != 0 {
		t.Fatalf("second load decoded %d images", n)
	}
	if !slices.Equal(s2.Train.X.Dense, tr.X.Dense) || !slices.Equal(s2.Test.X.Dense, te.X.Dense) {
		t.Fatal("cached pixels differ from decoded ones")
	}
	// Another seed selects other negatives and splits differently.
	s3, err := LoadISIC(dir, data.ImageOptions{Seed: 4})
	if err != nil {
		t.Fatal(err)
	}
	if slices.Equal(s3.Test.IDs, te.IDs) {
		t.Fatal("seeds 3 and 4 gave the same test split")
	}
	// Changing a kept file invalidates the cache.
	name := fmt.Sprintf("m_%04d.png", 5)
	writeImage(t, filepath.Join(dir, "malignant", name), lesion(99, 30, 30, true))
	future := time.Now().Add(time.Hour)
	os.Chtimes(filepath.Join(dir, "malignant", name), future, future)
	before = isicDecodes.Load()
	if _, err := LoadISIC(dir, data.ImageOptions{Seed: 3}); err != nil {
		t.Fatal(err)
	}
	if n := isicDecodes.Load() - before; n != 200 {
		t.Fatalf("after changing a file, %d images decoded, want 200", n)
	}
}

func TestISICKaggleLayouts(t *testing.T) {
	for _, sub := range []string{"train", filepath.Join("jpeg", "train")} {
		t.Run(sub, func(t *testing.T) {
			dir := t.TempDir()
			imgDir := filepath.Join(dir, sub)
			os.MkdirAll(imgDir, 0o755)
			var csv strings.Builder
			csv.WriteString("image_name,patient_id,sex,target\n")
			const nPos, nNeg = 30, 100
			for i := range nPos + nNeg {
				name := fmt.Sprintf("ISIC_%07d", 1000+i)
				pos := i < nPos
				fmt.Fprintf(&csv, "%s,IP_%d,male,%d\n", name, i, b2u8(pos))
				writeImage(t, filepath.Join(imgDir, name+".jpg"), lesion(i, 40, 32, pos))
			}
			os.WriteFile(filepath.Join(dir, "train.csv"), []byte(csv.String()), 0o644)
			cache := t.TempDir()
			s, err := LoadISIC(dir, data.ImageOptions{Size: 16, Seed: 1, CacheDir: cache})
			if err != nil {
				t.Fatal(err)
			}
			// 9·30 = 270 negatives wanted, 100 exist: all are kept.
			if s.Info.RowsKept != 130 || s.Train.X.Rows != 104 || s.Test.X.Rows != 26 || s.Info.Format != "isic-kaggle" {
				t.Fatalf("kept %d, train %d, test %d, format %s", s.Info.RowsKept, s.Train.X.Rows, s.Test.X.Rows, s.Info.Format)
			}
			if p := s.Info.Train.Positives + s.Info.Test.Positives; p != nPos {
				t.Fatalf("%d positives", p)
			}
			if _, err := os.Stat(filepath.Join(cache, ".splitguard-cache-16x16x3.bin")); err != nil {
				t.Fatalf("cache not in CacheDir: %v", err)
			}
			// A CSV row without an image.
			os.Remove(filepath.Join(imgDir, "ISIC_0001003.jpg"))
			if _, err := LoadISIC(dir, data.ImageOptions{NoCache: true}); err == nil || !strings.Contains(err.Error(), "line 5") || !strings.Contains(err.Error(), "ISIC_0001003") {
				t.Fatalf("missing image: %v", err)
			}
		})
	}
}

func TestISICColourValues(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "benign"), 0o755)
	os.MkdirAll(filepath.Join(dir, "malignant"), 0o755)
	solid := func(c color.RGBA) *image.RGBA {
		img := image.NewRGBA(image.Rect(0, 0, 50, 30))
		for i := 0; i < len(img.Pix); i += 4 {
			img.Pix[i], img.Pix[i+1], img.Pix[i+2], img.Pix[i+3] = c.R, c.G, c.B, 255
		}
		return img
	}
	writeImage(t, filepath.Join(dir, "benign", "b.png"), solid(color.RGBA{255, 128, 0, 255}))
	writeImage(t, filepath.Join(dir, "malignant", "m.png"), solid(color.RGBA{10, 20, 30, 255}))
	for _, tc := range []struct {
		channels int
		benign   []float64
	}{
		{3, []float64{1, 128.0 / 255, 0}},
		{1, []float64{float64(luma(255, 128, 0)) / 255}}, // 0.299·255 + 0.587·128 = 151.4 → 151
	} {
		s, err := LoadISIC(dir, data.ImageOptions{Size: 8, Channels: tc.channels, TestFrac: -1, NoCache: true})
		if err != nil {
			t.Fatal(err)
		}
		ds := s.Train
		if ds.X.Rows != 2 {
			t.Fatalf("%d rows", ds.X.Rows)
		}
		k := 0
		if ds.Labels[0] == 1 {
			k = 1
		}
		row := ds.X.Dense[k*ds.X.NumDense : (k+1)*ds.X.NumDense]
		for p, v := range row {
			if w := tc.benign[p%tc.channels]; math.Abs(float64(v)-w) > 1.0/255+1e-6 {
				t.Fatalf("channels %d: value %d = %v, want %v", tc.channels, p, v, w)
			}
		}
	}
	if luma(255, 128, 0) != 151 {
		t.Fatalf("luma(255,128,0) = %d, want 151", luma(255, 128, 0))
	}
}

func TestISICErrors(t *testing.T) {
	dir := t.TempDir()
	writeISICFolders(t, dir, 3, 10)
	bad := filepath.Join(dir, "malignant", "m_0001.png")
	os.WriteFile(bad, []byte("\x89PNG\r\n\x1a\nthis is not a png"), 0o644)
	if _, err := LoadISIC(dir, data.ImageOptions{NoCache: true}); err == nil || !strings.Contains(err.Error(), bad) {
		t.Fatalf("corrupt image: %v", err)
	}
	empty := t.TempDir()
	if _, err := LoadISIC(empty, data.ImageOptions{}); err == nil || !strings.Contains(err.Error(), "benign/") {
		t.Fatalf("empty folder: %v", err)
	}
	one := t.TempDir()
	writeISICFolders(t, one, 0, 5)
	if _, err := LoadISIC(one, data.ImageOptions{}); err == nil || !strings.Contains(err.Error(), "both classes") {
		t.Fatalf("no positives: %v", err)
	}
	dup := t.TempDir()
	writeISICFolders(t, dup, 2, 4)
	writeImage(t, filepath.Join(dup, "benign", "m_0001.jpg"), lesion(1, 10, 10, false))
	if _, err := LoadISIC(dup, data.ImageOptions{}); err == nil || !strings.Contains(err.Error(), "same image name") {
		t.Fatalf("duplicate names: %v", err)
	}
}

// FuzzParseIDX feeds arbitrary bytes to the IDX decoder: it must never
// panic, and what it accepts must be a header of the wanted magic whose
// dimensions multiply to the data's length.
func FuzzParseIDX(f *testing.F) {
	f.Add(idxBytes([]int{2, 2, 2}, make([]byte, 8)), uint32(idxImagesMagic))
	f.Add(idxBytes([]int{3}, []byte{0, 1, 9}), uint32(idxLabelsMagic))
	f.Add(gz(idxBytes([]int{1, 1, 1}, []byte{7})), uint32(idxImagesMagic))
	f.Add([]byte{0, 0, 8, 3, 0xff, 0xff, 0xff, 0xff}, uint32(idxImagesMagic))
	f.Fuzz(func(t *testing.T, raw []byte, want uint32) {
		dims, body, err := decodeIDX(bufio.NewReader(bytes.NewReader(raw)), want)
		if err != nil {
			return
		}
		if len(dims) != int(want&0xff) {
			t.Fatalf("%d dimensions for magic %#x", len(dims), want)
		}
		n := 1
		for _, d := range dims {
			if d < 1 || d > 1<<24 {
				t.Fatalf("dimension %d accepted", d)
			}
			n *= d
		}
		if n != len(body) {
			t.Fatalf("dimensions %v with %d data bytes", dims, len(body))
		}
	})
}
