package images

import (
	"bytes"
	"image"
	jpegenc "image/jpeg"
	pngenc "image/png"
	"os"
	"path/filepath"
	"testing"
)

// FuzzDecodeImage feeds arbitrary bytes as an image file to the ISIC
// image decoder: an error or an image within the size bound, never a
// panic or a decode of an implausibly large image.
func FuzzDecodeImage(f *testing.F) {
	var png bytes.Buffer
	img := image.NewRGBA(image.Rect(0, 0, 3, 2))
	if err := pngenc.Encode(&png, img); err != nil {
		f.Fatal(err)
	}
	f.Add(png.Bytes())
	var jpg bytes.Buffer
	if err := jpegenc.Encode(&jpg, img, nil); err != nil {
		f.Fatal(err)
	}
	f.Add(jpg.Bytes())
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, b []byte) {
		path := filepath.Join(dir, "img")
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		m, err := decodeImage(path)
		if err != nil {
			return
		}
		if r := m.Bounds(); r.Dx()*r.Dy() > 1<<26 {
			t.Fatalf("decoded a %v image", r)
		}
	})
}
