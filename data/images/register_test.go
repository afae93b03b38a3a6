package images

import (
	"reflect"
	"slices"
	"testing"

	"github.com/splitguard/splitguard/data"
)

// TestRegistered checks that importing the package registers both sets
// with package data, with their native shapes, and that data.LoadImages
// reaches the same reader as a direct call.
func TestRegistered(t *testing.T) {
	for _, f := range []string{data.FormatFashionMNIST, data.FormatISIC} {
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
	via, err := data.LoadImages(data.FormatFashionMNIST, dir, o)
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
	v2, err := data.LoadImages(data.FormatISIC, isic, oi)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(d2, v2) {
		t.Fatal("data.LoadImages(isic) differs from LoadISIC")
	}
}
