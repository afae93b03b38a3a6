// Package datatest makes small image data sets for other packages' tests.
package datatest

import (
	"fmt"
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
)

// WriteLesionFolders writes nPos malignant and nNeg benign size×size PNGs
// in the ISIC benign/ and malignant/ layout under dir: a dark disc on
// skin, darker and larger for the malignant ones, at varying places, so
// that a small CNN can tell them apart.
func WriteLesionFolders(dir string, nPos, nNeg, size int) error {
	s := size
	for _, c := range []struct {
		sub string
		n   int
		mal bool
	}{{"malignant", nPos, true}, {"benign", nNeg, false}} {
		if err := os.MkdirAll(filepath.Join(dir, c.sub), 0o755); err != nil {
			return err
		}
		for i := range c.n {
			img := image.NewRGBA(image.Rect(0, 0, s, s))
			blob, r := color.RGBA{150, 100, 80, 255}, s/5
			if c.mal {
				blob, r = color.RGBA{50, 25, 20, 255}, s/3
			}
			cx, cy := s/2+i%5-2, s/2+i%7-3
			for y := range s {
				for x := range s {
					px := color.RGBA{220, 180, uint8(150 + i%40), 255}
					if (x-cx)*(x-cx)+(y-cy)*(y-cy) < r*r {
						px = blob
					}
					img.SetRGBA(x, y, px)
				}
			}
			if err := writePNG(filepath.Join(dir, c.sub, fmt.Sprintf("%s_%04d.png", c.sub, i)), img); err != nil {
				return err
			}
		}
	}
	return nil
}

func writePNG(path string, img image.Image) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := png.Encode(f, img); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
