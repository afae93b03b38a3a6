package data

import (
	"fmt"
	"strings"

	"github.com/splitguard/splitguard/internal/registry"
)

// ImageOptions says how an image reader (fashion-mnist and isic in package
// data/images) reads, selects and shapes images. The zero value keeps each
// set's native resolution and its defaults (see the fields).
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
	// own (28 for Fashion-MNIST, 84 for ISIC, as in METHODS §6). Images of
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

// ImageReader reads an image set from a folder into a labelled split.
type ImageReader func(dir string, o ImageOptions) (*Split, error)

// ImageFormat describes an image set format for [RegisterImageFormat].
type ImageFormat struct {
	// Name is the value of a run's format (key format) that selects it.
	Name string
	// Size and Channels are the set's native side and channel count (1 or
	// 3): the defaults of a configuration's image size and channels.
	Size, Channels int
	// Read loads the set.
	Read ImageReader
	// Dir is the folder read when a configuration names none ("": it must
	// name one).
	Dir string
	// TestFiles says the set comes with its own test split, so a
	// configuration's test fraction must be 0; otherwise TestFrac is the
	// default held-out fraction (0: [DefaultTestFrac]).
	TestFiles bool
	TestFrac  float64
	// Classes is the class count of a multi-class set whose positive class
	// (a configuration's positive_class, 0 … Classes−1) is labelled 1; 0
	// for a set whose labels are binary already.
	Classes int
	// Options are the set's own settings among the image options a
	// configuration may set (by config key: "pos_rate", "neg_per_pos",
	// "image_pad"), each with its default (0: none); a configuration that
	// sets another is refused.
	Options map[string]float64
}

var imageFormats registry.Map[ImageFormat]

// RegisterImageFormat makes [LoadImages] read f.Name with f.Read. It is
// meant to be called from the init function of the package that implements
// the format, as image/png registers PNG with package image; a program
// links the format in by importing that package for its side effect. It
// panics if the name is empty or already registered, the reader is nil, or
// the native shape is not a side ≥ 1 with 1 or 3 channels.
func RegisterImageFormat(f ImageFormat) {
	if f.Name == "" || f.Read == nil || f.Size < 1 || (f.Channels != 1 && f.Channels != 3) {
		panic(fmt.Sprintf("data: RegisterImageFormat(%q): want a name, a reader, a side ≥ 1 and 1 or 3 channels (got side %d, %d channels)", f.Name, f.Size, f.Channels))
	}
	if !imageFormats.Add(f.Name, f) {
		panic(fmt.Sprintf("data: image format %q registered twice", f.Name))
	}
}

// LookupImageFormat returns the registered format called name.
func LookupImageFormat(name string) (ImageFormat, bool) { return imageFormats.Lookup(name) }

// ImageFormats returns the names of the registered image formats, sorted.
func ImageFormats() []string { return imageFormats.Names() }

// IsImageFormat reports whether format names a registered image set
// rather than a table.
func IsImageFormat(format string) bool {
	_, ok := LookupImageFormat(format)
	return ok
}

// ImageDefaults returns the native side and channel count that an image
// format registered; ok is false for a format that is not registered.
func ImageDefaults(format string) (size, channels int, ok bool) {
	f, ok := LookupImageFormat(format)
	return f.Size, f.Channels, ok
}

// LoadImages reads the image set of the given format from dir with the
// reader registered for it. The format's package must be linked into the
// program: importing github.com/splitguard/splitguard/data/images
// registers the built-in sets (config imports it).
func LoadImages(format, dir string, o ImageOptions) (*Split, error) {
	f, ok := LookupImageFormat(format)
	if !ok {
		have := "none"
		if names := ImageFormats(); len(names) > 0 {
			have = strings.Join(names, ", ")
		}
		return nil, fmt.Errorf("data: no reader for image format %q is linked into this program (registered: %s); import github.com/splitguard/splitguard/data/images for the built-in sets",
			format, have)
	}
	return f.Read(dir, o)
}

// UnitHash maps (seed, key, id) to a number in [0, 1) that behaves like a
// uniform draw, independently for different keys or seeds: the hash behind
// [Assign], for readers in other packages that make seeded per-example
// choices any party can reproduce.
func UnitHash(seed, key, id uint64) float64 { return unitHash(seed, key, id) }

// TestSplitKey is the key under which [Assign] decides test membership;
// a reader that orders examples by UnitHash under it ranks them as the
// test split does.
const TestSplitKey = testKey

// HashBytes is the salted 64-bit hash of b behind [HashID] (FNV-1a
// finalised with SplitMix64), for readers in other packages that key a
// cache or a choice by bytes.
func HashBytes(salt uint64, b []byte) uint64 { return hashBytes(salt, b) }
