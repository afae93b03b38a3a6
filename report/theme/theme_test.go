package theme

import (
	"image/color"
	"math"
	"strings"
	"testing"
)

var (
	black = color.RGBA{0, 0, 0, 0xff}
	white = color.RGBA{0xff, 0xff, 0xff, 0xff}
	red   = color.RGBA{0xff, 0, 0, 0xff}
)

// TestContrastDistance checks against published values: WCAG's 21:1 for
// black on white and 4.54:1 for #767676; CIELAB white (100, 0, 0) and sRGB
// red (53.24, 80.09, 67.20).
func TestContrastDistance(t *testing.T) {
	for _, c := range []struct {
		name string
		got  float64
		want float64
		tol  float64
	}{
		{"contrast black/white", Contrast(black, white), 21, 1e-9},
		{"contrast white/black", Contrast(white, black), 21, 1e-9},
		{"contrast white/white", Contrast(white, white), 1, 1e-12},
		{"contrast #767676/white", Contrast(color.RGBA{0x76, 0x76, 0x76, 0xff}, white), 4.54, 0.01},
		{"ΔE black/white", Distance(black, white), 100, 0.01},
		{"ΔE red/black", Distance(red, black), math.Sqrt(53.24*53.24 + 80.09*80.09 + 67.20*67.20), 0.05},
		{"ΔE red/red", Distance(red, red), 0, 0},
	} {
		if math.Abs(c.got-c.want) > c.tol {
			t.Errorf("%s = %v, want %v ± %v", c.name, c.got, c.want, c.tol)
		}
	}
}

func TestPaletteCheck(t *testing.T) {
	for _, c := range []struct {
		name string
		p    Palette
		want []string // substrings of the error; none: no error
	}{
		{"empty", Palette{}, nil},
		{"distinct", Palette{"a": {0x00, 0x72, 0xb2, 0xff}, "b": {0xd5, 0x5e, 0x00, 0xff}, "c": {0x33, 0x33, 0x33, 0xff}}, nil},
		{"yellow on white", Palette{"y": {0xf0, 0xe4, 0x42, 0xff}}, []string{"y: colour #f0e442 contrasts"}},
		{"transparent", Palette{"t": {0x00, 0x72, 0xb2, 0}}, []string{"t: colour #0072b2 is not opaque"}},
		{"too close", Palette{"a": {0x00, 0x72, 0xb2, 0xff}, "b": {0x00, 0x74, 0xb4, 0xff}}, []string{"a #0072b2 and b #0074b4 differ"}},
		{"equal", Palette{"a": {0x33, 0x33, 0x33, 0xff}, "b": {0x33, 0x33, 0x33, 0xff}}, []string{"ΔE 0.0"}},
	} {
		err := c.p.Check()
		if len(c.want) == 0 {
			if err != nil {
				t.Errorf("%s: %v", c.name, err)
			}
			continue
		}
		if err == nil {
			t.Errorf("%s: no error, want %q", c.name, c.want)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q, want it to contain %q", c.name, err, w)
			}
		}
	}
}

func TestPaletteColorJS(t *testing.T) {
	p := Palette{"marvell": {0x00, 0x72, 0xb2, 0xff}, "iso": {0xe6, 0x9f, 0x00, 0xff}}
	if got := p.Color("Marvell"); got != p["marvell"] {
		t.Errorf("Color(Marvell) = %s, want %s", Hex(got), Hex(p["marvell"]))
	}
	combo := p.Color("marvell+dcor")
	if combo != p.Color("marvell+dcor") || combo.A != 0xff {
		t.Errorf("Color(marvell+dcor) = %v, want a stable opaque colour", combo)
	}
	if got, want := p.JS(), `{"iso":"#e69f00","marvell":"#0072b2"}`; got != want {
		t.Errorf("JS() = %s, want %s", got, want)
	}
	if got := (Palette{}).JS(); got != "{}" {
		t.Errorf("empty JS() = %s, want {}", got)
	}
}

func TestPaletteOf(t *testing.T) {
	p := PaletteOf(map[string]uint32{"marvell": 0x0072b2, "max_norm": 0x8844aa, "white": 0xffffff, "wide": 0x1ff0000})
	for _, c := range []struct {
		method string
		want   color.RGBA
	}{
		{"marvell", color.RGBA{0x00, 0x72, 0xb2, 0xff}},
		{"max_norm", color.RGBA{0x88, 0x44, 0xaa, 0xff}},
		{"white", white},
		{"wide", red},
	} {
		if got := p[c.method]; got != c.want {
			t.Errorf("PaletteOf: %s = %v, want %v", c.method, got, c.want)
		}
	}
}
