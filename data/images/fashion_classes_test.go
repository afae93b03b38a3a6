package images

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestFashionMNISTClasses(t *testing.T) {
	dir := t.TempDir()
	train, test := []byte{3, 0, 9, 1}, []byte{7, 2}
	for name, body := range map[string][]byte{"train-labels-idx1-ubyte": train, "t10k-labels-idx1-ubyte": test} {
		if err := os.WriteFile(filepath.Join(dir, name), idxBytes([]int{len(body)}, body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := FashionMNISTClasses(dir)
	if err != nil {
		t.Fatal(err)
	}
	if want := []uint8{3, 0, 9, 1, 7, 2}; !slices.Equal(got, want) {
		t.Fatalf("classes %v, want %v", got, want)
	}
	if err := os.WriteFile(filepath.Join(dir, "t10k-labels-idx1-ubyte"), idxBytes([]int{1}, []byte{10}), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := FashionMNISTClasses(dir); err == nil {
		t.Fatal("class 10 accepted")
	}
}
