package images

import (
	"maps"
	"reflect"
	"slices"
	"testing"

	"github.com/splitguard/splitguard/data"
)

// TestRegistered checks that importing the package registers both sets
// with package data, with their native shapes, and that data.LoadImages
// reaches the same reader as a direct call.
func TestRegistered(t *testing.T) {
	for _, f := range []string{FormatFashionMNIST, FormatISIC} {
		if !slices.Contains(data.ImageFormats(), f) {
			t.Fatalf("%s not registered: %v", f, data.ImageFormats())
		}
	}
	dir := t.TempDir()
	writeFashion(t, dir, 40, 10, 4)
	o := data.ImageOptions{Size: 4, PositiveClass: 3}
	direct, err := LoadFashionMNIST(dir, o)
	if err != nil {
		t.Fatal(err)
	}
	via, err := data.LoadImages(FormatFashionMNIST, dir, o)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(direct, via) {
		t.Fatal("data.LoadImages(fashion-mnist) differs from LoadFashionMNIST")
	}
	isic := t.TempDir()
	writeISICFolders(t, isic, 3, 9)
	oi := data.ImageOptions{Size: 8, Seed: 1, NoCache: true}
	d2, err := LoadISIC(isic, oi)
	if err != nil {
		t.Fatal(err)
	}
	v2, err := data.LoadImages(FormatISIC, isic, oi)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(d2, v2) {
		t.Fatal("data.LoadImages(isic) differs from LoadISIC")
	}
}

// TestBuiltInSetsDeclare checks what each set declares about itself
// against METHODS §6: Fashion-MNIST is 28×28 grey, ten classes, with its
// own test files in Debian's folder; ISIC is resized to 84×84 RGB and
// holds out 20% with 9 benign images per malignant one.
func TestBuiltInSetsDeclare(t *testing.T) {
	for _, tc := range []struct {
		format         string
		size, channels int
		dir            string
		testFiles      bool
		testFrac       float64
		classes        int
		options        map[string]float64
	}{
		{"fashion-mnist", 28, 1, "/usr/share/datasets/fashion-mnist", true, 0, 10, map[string]float64{"pos_rate": 0, "image_pad": 0}},
		{"isic", 84, 3, "", false, 0.2, 0, map[string]float64{"neg_per_pos": 9}},
	} {
		f, ok := data.LookupImageFormat(tc.format)
		if !ok || !data.IsImageFormat(tc.format) {
			t.Errorf("%s not registered", tc.format)
			continue
		}
		if s, c, _ := data.ImageDefaults(tc.format); s != tc.size || c != tc.channels {
			t.Errorf("%s: ImageDefaults = %d, %d; want %d, %d", tc.format, s, c, tc.size, tc.channels)
		}
		if f.Dir != tc.dir || f.TestFiles != tc.testFiles || f.TestFrac != tc.testFrac || f.Classes != tc.classes || !maps.Equal(f.Options, tc.options) {
			t.Errorf("%s declares dir %q, test files %v, test fraction %v, %d classes, options %v; want %q, %v, %v, %d, %v",
				tc.format, f.Dir, f.TestFiles, f.TestFrac, f.Classes, f.Options, tc.dir, tc.testFiles, tc.testFrac, tc.classes, tc.options)
		}
	}
}
