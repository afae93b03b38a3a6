package theme

import (
	"errors"
	"fmt"
	"image/color"
	"maps"
	"math"
	"slices"
)

// MinContrast is the least contrast ratio (WCAG's relative luminance) a
// method's colour has against the white of a figure or a table: a line of
// it stays visible.
const MinContrast = 2

// MinDistance is the least CIE76 colour difference ΔE (in CIELAB, D65)
// between two methods' colours: two curves are told apart at a glance.
const MinDistance = 15

// Check returns an error naming every colour of the palette that is not
// opaque or contrasts too little with white ([MinContrast]), and every
// pair of methods whose colours are too close ([MinDistance]).
func (p Palette) Check() error {
	names := slices.Sorted(maps.Keys(p))
	var errs []error
	for _, m := range names {
		c := p[m]
		if c.A != 0xff {
			errs = append(errs, fmt.Errorf("%s: colour %s is not opaque (alpha %d)", m, Hex(c), c.A))
		}
		if r := Contrast(c, color.RGBA{0xff, 0xff, 0xff, 0xff}); r < MinContrast {
			errs = append(errs, fmt.Errorf("%s: colour %s contrasts %.2f:1 with white, want at least %v:1", m, Hex(c), r, MinContrast))
		}
	}
	for i, a := range names {
		for _, b := range names[i+1:] {
			if d := Distance(p[a], p[b]); d < MinDistance {
				errs = append(errs, fmt.Errorf("%s %s and %s %s differ by ΔE %.1f, want at least %v", a, Hex(p[a]), b, Hex(p[b]), d, MinDistance))
			}
		}
	}
	return errors.Join(errs...)
}

// Contrast returns the WCAG contrast ratio of two colours, from 1 (equal
// luminance) to 21 (black on white).
func Contrast(a, b color.RGBA) float64 {
	la, lb := luminance(a), luminance(b)
	if la < lb {
		la, lb = lb, la
	}
	return (la + 0.05) / (lb + 0.05)
}

// Distance returns the CIE76 colour difference ΔE of two colours: the
// Euclidean distance of their CIELAB coordinates (D65 white).
func Distance(a, b color.RGBA) float64 {
	la, aa, ba := lab(a)
	lb, ab, bb := lab(b)
	return math.Sqrt((la-lb)*(la-lb) + (aa-ab)*(aa-ab) + (ba-bb)*(ba-bb))
}

// linear returns an sRGB channel in linear light.
func linear(v uint8) float64 {
	c := float64(v) / 255
	if c <= 0.04045 {
		return c / 12.92
	}
	return math.Pow((c+0.055)/1.055, 2.4)
}

// luminance is the relative luminance Y of an sRGB colour.
func luminance(c color.RGBA) float64 {
	return 0.2126*linear(c.R) + 0.7152*linear(c.G) + 0.0722*linear(c.B)
}

// lab returns the CIELAB coordinates of an sRGB colour (D65 white).
func lab(c color.RGBA) (l, a, b float64) {
	r, g, bl := linear(c.R), linear(c.G), linear(c.B)
	x := (0.4124*r + 0.3576*g + 0.1805*bl) / 0.95047
	y := 0.2126*r + 0.7152*g + 0.0722*bl
	z := (0.0193*r + 0.1192*g + 0.9505*bl) / 1.08883
	f := func(t float64) float64 {
		if t > 216.0/24389 {
			return math.Cbrt(t)
		}
		return (24389.0/27*t + 16) / 116
	}
	fx, fy, fz := f(x), f(y), f(z)
	return 116*fy - 16, 500 * (fx - fy), 200 * (fy - fz)
}
