// Package theme is the look shared by the HTML report and the live training
// page: one stylesheet, and the rules of the colours (a [Palette] of the
// protection methods, each declared by its defence, that [Palette.Check]
// holds legible and distinct; shades by parameter), so that a method has
// the same colour in every figure, table and live chart.
package theme

import (
	"fmt"
	"hash/fnv"
	"image/color"
	"maps"
	"slices"
	"strings"
)

// CSS is the stylesheet of both the report and the live page. It needs no
// external resource (system fonts only).
const CSS = `
:root { --fg:#1d2330; --muted:#5b6475; --bg:#f6f7f9; --card:#ffffff; --line:#dde1e8; --accent:#1f5fbf; --warn:#9a5b00; --warnbg:#fff6e5; --bad:#b3261e; }
* { box-sizing: border-box; }
body { margin:0; font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif; color:var(--fg); background:var(--bg); }
header.top { background:#1d2330; color:#fff; padding:14px 28px; display:flex; align-items:baseline; gap:18px; flex-wrap:wrap; }
header.top h1 { font-size:20px; margin:0; font-weight:600; letter-spacing:.2px; }
header.top .sub { color:#b8c0cf; font-size:13px; }
main { max-width:1280px; margin:0 auto; padding:18px 28px 40px; }
section.card { background:var(--card); border:1px solid var(--line); border-radius:8px; padding:16px 20px; margin:18px 0; }
section.card h2 { font-size:17px; margin:0 0 4px; }
section.card p.lead { color:var(--muted); margin:0 0 12px; font-size:13.5px; }
.figs { display:grid; grid-template-columns:repeat(auto-fill, minmax(540px, 1fr)); gap:14px; }
figure { margin:0; border:1px solid var(--line); border-radius:6px; padding:8px; background:#fff; }
figure.wide { grid-column: 1 / -1; }
figure.wide img { max-width:1100px; margin:0 auto; }
figure img { width:100%; height:auto; display:block; }
figcaption { font-size:12.5px; color:var(--muted); margin-top:4px; display:flex; justify-content:space-between; gap:8px; }
figcaption a { color:var(--accent); text-decoration:none; margin-left:8px; }
.note { background:var(--warnbg); border:1px solid #f0d9a8; color:var(--warn); border-radius:6px; padding:8px 12px; margin:8px 0; font-size:13.5px; }
.note ul { margin:4px 0 0 18px; padding:0; }
.tablewrap { overflow-x:auto; max-height:70vh; overflow-y:auto; border:1px solid var(--line); border-radius:6px; }
table.runs { border-collapse:collapse; font-size:12.5px; font-variant-numeric:tabular-nums; width:max-content; min-width:100%; }
table.runs th, table.runs td { padding:4px 8px; border-bottom:1px solid var(--line); text-align:right; white-space:nowrap; }
table.runs th { position:sticky; top:0; background:#eef1f6; cursor:pointer; user-select:none; font-weight:600; }
table.runs th.sorted-asc::after { content:" ▲"; font-size:10px; }
table.runs th.sorted-desc::after { content:" ▼"; font-size:10px; }
table.runs td.txt, table.runs th.txt { text-align:left; }
table.runs tr:hover td { background:#f3f6fb; }
table.runs td.failed { color:var(--bad); font-weight:600; }
.swatch { display:inline-block; width:10px; height:10px; border-radius:2px; margin-right:6px; vertical-align:baseline; }
.kpis { display:flex; gap:12px; flex-wrap:wrap; margin:8px 0; }
.kpi { background:#fff; border:1px solid var(--line); border-radius:6px; padding:8px 14px; min-width:130px; }
.kpi .k { font-size:12px; color:var(--muted); }
.kpi .v { font-size:20px; font-weight:600; font-variant-numeric:tabular-nums; }
canvas.chart { width:100%; height:260px; display:block; border:1px solid var(--line); border-radius:6px; background:#fff; }
.legend { font-size:12.5px; color:var(--muted); margin:4px 0 0; display:flex; flex-wrap:wrap; gap:10px; }
code { background:#eef1f6; padding:1px 4px; border-radius:3px; }
footer { color:var(--muted); font-size:12px; text-align:center; padding:16px; }
`

// Series is the palette of lines that are not methods (the attacks of one
// run's per-layer figure, reference lines): the Okabe–Ito hues, in the
// order figures use them.
var Series = []color.RGBA{
	{0x00, 0x72, 0xb2, 0xff}, {0xd5, 0x5e, 0x00, 0xff}, {0x00, 0x9e, 0x73, 0xff},
	{0x88, 0x44, 0xaa, 0xff}, {0xe6, 0x9f, 0x00, 0xff}, {0x33, 0x33, 0x33, 0xff}, {0xcc, 0x79, 0xa7, 0xff},
}

// extra colours for method names a palette does not hold (combinations
// such as "marvell+dcor"), picked by a hash of the name so that they are
// stable.
var extra = []color.RGBA{
	{0x56, 0xb4, 0xe9, 0xff}, {0x8c, 0x56, 0x4b, 0xff}, {0x17, 0xbe, 0xcf, 0xff},
	{0xbc, 0xbd, 0x22, 0xff}, {0x7f, 0x7f, 0x7f, 0xff}, {0xd6, 0x27, 0x28, 0xff},
}

// Palette is the colour of each protection method, keyed by name. Theme
// holds no method's colour: each defence declares its own where it
// registers (the report and the live page build their palette from the
// registry).
type Palette map[string]color.RGBA

// PaletteOf returns the palette of colours given as 0xrrggbb (as
// protect.Colors gives them).
func PaletteOf(rgb map[string]uint32) Palette {
	p := make(Palette, len(rgb))
	for m, v := range rgb {
		p[m] = RGB(v)
	}
	return p
}

// RGB returns the opaque colour 0xrrggbb (the bits above 24 ignored).
func RGB(v uint32) color.RGBA {
	return color.RGBA{uint8(v >> 16), uint8(v >> 8), uint8(v), 0xff}
}

// Color returns the colour of a method (the name compared without case);
// a name the palette does not hold gets a stable colour of its own.
func (p Palette) Color(method string) color.RGBA {
	if c, ok := p[strings.ToLower(method)]; ok {
		return c
	}
	h := fnv.New32a()
	h.Write([]byte(method))
	return extra[h.Sum32()%uint32(len(extra))]
}

// JS returns the palette as a JavaScript object literal mapping each
// method, sorted by name, to its CSS colour, for the live page's inline
// script.
func (p Palette) JS() string {
	var b strings.Builder
	b.WriteString("{")
	for i, m := range slices.Sorted(maps.Keys(p)) {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, "%q:%q", m, Hex(p[m]))
	}
	b.WriteString("}")
	return b.String()
}

// Shade returns the i-th of n shades of c (0 ≤ i < n): the lightest for
// i = 0 and c itself for i = n−1, so that a method's settings ordered by
// parameter go from light (weak) to full colour (strong).
func Shade(c color.RGBA, i, n int) color.RGBA {
	if n <= 1 || i >= n-1 || i < 0 {
		return c
	}
	// Mix with white: at most 55% white for the lightest shade.
	w := 0.55 * float64(n-1-i) / float64(n-1)
	mix := func(v uint8) uint8 { return uint8(float64(v)*(1-w) + 255*w + 0.5) }
	return color.RGBA{mix(c.R), mix(c.G), mix(c.B), 0xff}
}

// Hex returns c as a CSS colour "#rrggbb".
func Hex(c color.RGBA) string { return fmt.Sprintf("#%02x%02x%02x", c.R, c.G, c.B) }
