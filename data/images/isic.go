package images

import (
	"bufio"
	"encoding/binary"
	"encoding/csv"
	"fmt"
	"image"
	_ "image/jpeg" // ISIC images are JPEGs
	_ "image/png"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/splitguard/splitguard/atomicfile"

	"github.com/splitguard/splitguard/data"
)

// isicDecodes counts images decoded by LoadISIC (tests check cache hits).
var isicDecodes atomic.Int64

// isicFile is one labelled image file.
type isicFile struct {
	path  string // absolute or as given under dir
	name  string // image name: the file name without extension
	label uint8
	id    uint64
}

// LoadISIC reads the ISIC skin-lesion images under dir in one of two
// layouts:
//
//   - dir/benign/ and dir/malignant/, holding the images of each class;
//   - Kaggle's ISIC 2020: dir/train.csv with (at least) the columns
//     image_name and target (0 or 1), and the images named
//     image_name.jpg (or .jpeg, .png) in dir/train/ or dir/jpeg/train/.
//
// JPEG and PNG are decoded with the standard library. As in the paper
// (METHODS §6), every malignant (positive) image is kept plus o.NegPerPos
// (default 9) times as many benign ones chosen at random, then o.TestFrac
// (default 20%) of the kept images form the test split. Both choices are
// keyed hashes of (o.Seed, ID), so they do not depend on file order and
// any party with the same IDs reproduces them; if there are too few
// negatives all are kept (Info.Train/Test then show the higher positive
// rate). The test split is exactly round(TestFrac·kept) images.
//
// An image's ID is [HashID] of its name (file name without extension,
// i.e. Kaggle's image_name), so names must be unique. Only the kept
// images are decoded, in parallel (o.Workers), resized to o.Size (84)
// square with a Catmull-Rom kernel, with o.Channels (3) channels, and
// scaled to [0, 1]. The resized 8-bit pixels are cached in
// CacheDir/.splitguard-cache-SxSxC.bin (CacheDir defaults to dir), keyed
// by the kept files' names, sizes and modification times and the output
// shape: a second load with the same selection reads the cache instead of
// decoding. A cache that cannot be written (read-only folder) is skipped.
// A file that does not decode is an error naming it.
func LoadISIC(dir string, o data.ImageOptions) (*data.Split, error) {
	o, err := resolve(o, FormatISIC, ISICSize, 3)
	if err != nil {
		return nil, err
	}
	files, format, err := listISIC(dir)
	if err != nil {
		return nil, err
	}
	ids := make([]uint64, len(files))
	seen := make(map[uint64]string, len(files))
	var pos, neg []int
	for i := range files {
		f := &files[i]
		f.id = data.HashID(f.name)
		if prev, dup := seen[f.id]; dup {
			return nil, fmt.Errorf("isic: %s and %s have the same image name %q", prev, f.path, f.name)
		}
		seen[f.id] = f.path
		ids[i] = f.id
		if f.label == 1 {
			pos = append(pos, i)
		} else {
			neg = append(neg, i)
		}
	}
	if len(pos) == 0 || len(neg) == 0 {
		return nil, fmt.Errorf("isic: %s: %d malignant and %d benign images; both classes are needed", dir, len(pos), len(neg))
	}
	nNeg := len(neg)
	if o.NegPerPos > 0 {
		nNeg = min(nNeg, o.NegPerPos*len(pos))
	}
	kept := append(slices.Clone(pos), byHash(ids, neg, o.Seed, imageNegKey)[:nNeg]...)
	order := byHash(ids, kept, o.Seed, data.TestSplitKey)
	nTest := int(o.TestFrac*float64(len(order)) + 0.5)
	testIdx, trainIdx := order[:nTest], order[nTest:]
	// Keep each split in file order (sorted names) for readability.
	slices.Sort(testIdx)
	slices.Sort(trainIdx)
	all := append(slices.Clone(trainIdx), testIdx...)

	sel := make([]isicFile, len(all))
	for k, i := range all {
		sel[k] = files[i]
	}
	pix, err := isicPixels(dir, sel, o)
	if err != nil {
		return nil, err
	}
	w := o.Size * o.Size * o.Channels
	mk := func(idx []int, pix []byte) *data.Dataset {
		ids := make([]uint64, len(idx))
		labels := make([]uint8, len(idx))
		for k, i := range idx {
			ids[k], labels[k] = files[i].id, files[i].label
		}
		return imagePart(ids, labels, pix, o.Size, o.Channels)
	}
	train := mk(trainIdx, pix[:len(trainIdx)*w])
	test := mk(testIdx, pix[len(trainIdx)*w:])
	if train.X.Rows == 0 {
		return nil, fmt.Errorf("isic: %s: no training images after the split", dir)
	}
	tp, sp := countPos(train.Labels), countPos(test.Labels)
	return &data.Split{Train: train, Test: test, Info: data.Info{
		Path: dir, Format: format,
		RowsRead: int64(len(files)), RowsKept: int64(len(all)),
		Train:     data.PartInfo{Rows: train.X.Rows, Positives: tp},
		Test:      data.PartInfo{Rows: test.X.Rows, Positives: sp},
		HasLabels: true,
		Sample:    float64(len(all)) / float64(len(files)),
		TestFrac:  o.TestFrac,
		Seed:      o.Seed,
	}}, nil
}

var imageExts = []string{".jpg", ".jpeg", ".png"}

func isImageName(n string) bool {
	return !strings.HasPrefix(n, ".") && slices.Contains(imageExts, strings.ToLower(filepath.Ext(n)))
}

func isDir(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}

// listISIC finds the layout and lists the labelled files, sorted by name.
func listISIC(dir string) ([]isicFile, string, error) {
	csvPath := filepath.Join(dir, "train.csv")
	if _, err := os.Stat(csvPath); err == nil {
		files, err := listKaggle(dir, csvPath)
		return files, "isic-kaggle", err
	}
	b, m := filepath.Join(dir, "benign"), filepath.Join(dir, "malignant")
	if !isDir(b) || !isDir(m) {
		return nil, "", fmt.Errorf("isic: %s: found neither train.csv nor the folders benign/ and malignant/", dir)
	}
	var files []isicFile
	for _, c := range []struct {
		dir   string
		label uint8
	}{{b, 0}, {m, 1}} {
		ents, err := os.ReadDir(c.dir)
		if err != nil {
			return nil, "", fmt.Errorf("isic: %w", err)
		}
		for _, e := range ents {
			if e.Type().IsRegular() && isImageName(e.Name()) {
				n := e.Name()
				files = append(files, isicFile{path: filepath.Join(c.dir, n), name: strings.TrimSuffix(n, filepath.Ext(n)), label: c.label})
			}
		}
	}
	slices.SortFunc(files, func(a, b isicFile) int { return strings.Compare(a.name, b.name) })
	return files, "isic-folders", nil
}

// listKaggle reads train.csv and matches its image names with the files
// of train/ or jpeg/train/.
func listKaggle(dir, csvPath string) ([]isicFile, error) {
	var imgDir string
	for _, d := range []string{filepath.Join(dir, "train"), filepath.Join(dir, "jpeg", "train")} {
		if isDir(d) {
			imgDir = d
			break
		}
	}
	if imgDir == "" {
		return nil, fmt.Errorf("isic: %s: found %s but neither train/ nor jpeg/train/ beside it", dir, csvPath)
	}
	ents, err := os.ReadDir(imgDir)
	if err != nil {
		return nil, fmt.Errorf("isic: %w", err)
	}
	byStem := make(map[string]string, len(ents))
	for _, e := range ents {
		if n := e.Name(); isImageName(n) {
			byStem[strings.TrimSuffix(n, filepath.Ext(n))] = n
		}
	}
	f, err := os.Open(csvPath)
	if err != nil {
		return nil, fmt.Errorf("isic: %w", err)
	}
	defer f.Close()
	r := csv.NewReader(bufio.NewReader(f))
	r.ReuseRecord = true
	hdr, err := r.Read()
	if err != nil {
		return nil, fmt.Errorf("isic: %s: header: %w", csvPath, err)
	}
	nameCol, targetCol := -1, -1
	for j, h := range hdr {
		switch strings.TrimSpace(strings.TrimPrefix(h, "\ufeff")) {
		case "image_name":
			nameCol = j
		case "target":
			targetCol = j
		}
	}
	if nameCol < 0 || targetCol < 0 {
		return nil, fmt.Errorf("isic: %s: header %q lacks the column image_name or target", csvPath, strings.Join(hdr, ","))
	}
	var files []isicFile
	for line := 2; ; line++ {
		rec, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("isic: %s: %w", csvPath, err)
		}
		name := strings.TrimSpace(rec[nameCol])
		t, err := strconv.ParseFloat(strings.TrimSpace(rec[targetCol]), 64)
		if err != nil || (t != 0 && t != 1) {
			return nil, fmt.Errorf("isic: %s line %d: target %q is not 0 or 1", csvPath, line, rec[targetCol])
		}
		file, ok := byStem[name]
		if !ok {
			return nil, fmt.Errorf("isic: %s line %d: no image %s.jpg (or .jpeg, .png) in %s", csvPath, line, name, imgDir)
		}
		files = append(files, isicFile{path: filepath.Join(imgDir, file), name: name, label: uint8(t)})
	}
	slices.SortFunc(files, func(a, b isicFile) int { return strings.Compare(a.name, b.name) })
	return files, nil
}

// Cache file format (little-endian): magic, key uint64, image count
// uint32, side uint32, channels uint32, then the pixels.
const isicCacheMagic = "SGIMGC1\x00"

// isicPixels returns the selected images as 8-bit pixels, from the cache
// when it matches, else by decoding (and then writing the cache).
func isicPixels(dir string, sel []isicFile, o data.ImageOptions) ([]byte, error) {
	s, c := o.Size, o.Channels
	w := s * s * c
	cachePath := ""
	var key uint64
	if !o.NoCache {
		cd := o.CacheDir
		if cd == "" {
			cd = dir
		}
		cachePath = filepath.Join(cd, fmt.Sprintf(".splitguard-cache-%dx%dx%d.bin", s, s, c))
		var err error
		if key, err = isicCacheKey(sel, s, c); err != nil {
			return nil, err
		}
		if pix, ok := readISICCache(cachePath, key, len(sel), s, c); ok {
			return pix, nil
		}
	}
	pix := make([]byte, len(sel)*w)
	if err := decodeAll(sel, pix, o); err != nil {
		return nil, err
	}
	if cachePath != "" {
		writeISICCache(cachePath, key, len(sel), s, c, pix) // best effort
	}
	return pix, nil
}

// isicCacheKey hashes the selection (in order) with each file's size and
// modification time, and the output shape.
func isicCacheKey(sel []isicFile, s, c int) (uint64, error) {
	var b []byte
	b = binary.LittleEndian.AppendUint32(b, uint32(s))
	b = binary.LittleEndian.AppendUint32(b, uint32(c))
	for _, f := range sel {
		st, err := os.Stat(f.path)
		if err != nil {
			return 0, fmt.Errorf("isic: %w", err)
		}
		b = append(b, f.name...)
		b = append(b, 0)
		b = binary.LittleEndian.AppendUint64(b, uint64(st.Size()))
		b = binary.LittleEndian.AppendUint64(b, uint64(st.ModTime().UnixNano()))
	}
	return data.HashBytes(0x434143484500, b), nil
}

func readISICCache(path string, key uint64, n, s, c int) ([]byte, bool) {
	f, err := os.Open(path)
	if err != nil {
		return nil, false
	}
	defer f.Close()
	hdr := make([]byte, len(isicCacheMagic)+8+12)
	if _, err := io.ReadFull(f, hdr); err != nil || string(hdr[:8]) != isicCacheMagic {
		return nil, false
	}
	le := binary.LittleEndian
	if le.Uint64(hdr[8:]) != key || int(le.Uint32(hdr[16:])) != n || int(le.Uint32(hdr[20:])) != s || int(le.Uint32(hdr[24:])) != c {
		return nil, false
	}
	pix := make([]byte, n*s*s*c)
	if _, err := io.ReadFull(f, pix); err != nil {
		return nil, false
	}
	if m, _ := f.Read(make([]byte, 1)); m != 0 {
		return nil, false // trailing bytes: not a cache we wrote
	}
	return pix, true
}

// writeISICCache writes the cache to a temporary name and renames it;
// failures leave no cache behind and are otherwise ignored.
func writeISICCache(path string, key uint64, n, s, c int, pix []byte) {
	le := binary.LittleEndian
	hdr := append([]byte(isicCacheMagic), make([]byte, 20)...)
	le.PutUint64(hdr[8:], key)
	le.PutUint32(hdr[16:], uint32(n))
	le.PutUint32(hdr[20:], uint32(s))
	le.PutUint32(hdr[24:], uint32(c))
	_ = atomicfile.Write(path, 0o644, func(w io.Writer) error {
		if _, err := w.Write(hdr); err != nil {
			return err
		}
		_, err := w.Write(pix)
		return err
	})
}

// decodeAll decodes and resizes sel into pix (one s·s·c block each) with
// o.Workers goroutines; the first failure (in file order) is returned.
func decodeAll(sel []isicFile, pix []byte, o data.ImageOptions) error {
	w := o.Size * o.Size * o.Channels
	errs := make([]error, len(sel))
	var next atomic.Int64
	var failed atomic.Bool
	var wg sync.WaitGroup
	for range min(o.Workers, len(sel)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sc := newRGBScaler(o.Size, o.Channels)
			for !failed.Load() {
				k := int(next.Add(1) - 1)
				if k >= len(sel) {
					return
				}
				img, err := decodeImage(sel[k].path)
				if err != nil {
					errs[k] = err
					failed.Store(true)
					return
				}
				sc.scale(img, pix[k*w:(k+1)*w])
			}
		}()
	}
	wg.Wait()
	return firstErr(errs)
}

func firstErr(errs []error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

func decodeImage(path string) (image.Image, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("isic: %w", err)
	}
	defer f.Close()
	isicDecodes.Add(1)
	cfg, _, err := image.DecodeConfig(bufio.NewReader(f))
	if err != nil {
		return nil, fmt.Errorf("isic: %s: not a decodable JPEG or PNG image: %w", path, err)
	}
	if cfg.Width <= 0 || cfg.Height <= 0 || cfg.Width > 1<<15 || cfg.Height > 1<<15 || cfg.Width*cfg.Height > 1<<26 {
		return nil, fmt.Errorf("isic: %s: implausible image size %d×%d", path, cfg.Width, cfg.Height)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, fmt.Errorf("isic: %s: %w", path, err)
	}
	img, _, err := image.Decode(bufio.NewReaderSize(f, 1<<16))
	if err != nil {
		return nil, fmt.Errorf("isic: %s: not a decodable JPEG or PNG image: %w", path, err)
	}
	return img, nil
}
