package report

import (
	"encoding/base64"
	"fmt"
	"html/template"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"

	"github.com/splitguard/splitguard/atomicfile"
	"github.com/splitguard/splitguard/report/theme"
)

// Section is one titled group of figures in the page.
type Section struct {
	ID, Title, Lead string
	Figures         []*Figure
	// Empty says why the section has no figure (shown instead).
	Empty string
}

// Page is everything index.html shows.
type Page struct {
	Title, Subtitle string
	Notes           []string
	KPIs            []KPI
	Sections        []*Section
	Table           Table
	Generated       string
}

// KPI is a headline number of a single-run report.
type KPI struct{ Name, Value string }

// Table is the table of every run's summary.
type Table struct {
	Head []Cell
	Rows [][]Cell
}

// Cell is a table cell: Text shown, Sort the key the inline script sorts
// by (numbers sort numerically), Class a CSS class, Color a swatch.
type Cell struct {
	Text, Sort, Class, Color string
}

// Write reads dir ([Load]) and writes its report into dir/report:
// index.html and every figure as PNG and SVG. It returns the path of
// index.html.
func Write(dir string) (string, error) {
	set, err := Load(dir)
	if err != nil {
		return "", err
	}
	return Generate(set, filepath.Join(dir, "report"))
}

// Generate draws the figures of set and writes them and index.html into
// outDir (created if needed). It returns the path of index.html.
func Generate(set *Set, outDir string) (string, error) {
	page, err := Build(set)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return "", fmt.Errorf("report: %w", err)
	}
	for _, s := range page.Sections {
		for _, f := range s.Figures {
			if err := writeAtomic(filepath.Join(outDir, f.Name+".png"), f.PNG); err != nil {
				return "", err
			}
			if err := writeAtomic(filepath.Join(outDir, f.Name+".svg"), f.SVG); err != nil {
				return "", err
			}
		}
	}
	var b strings.Builder
	if err := pageTmpl.Execute(&b, page); err != nil {
		return "", fmt.Errorf("report: page: %w", err)
	}
	index := filepath.Join(outDir, "index.html")
	if err := writeAtomic(index, []byte(b.String())); err != nil {
		return "", err
	}
	return index, nil
}

func writeAtomic(path string, data []byte) error {
	if err := atomicfile.WriteFile(path, data, 0o644); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	return nil
}

// Build draws every figure of set and assembles the page (nothing is
// written).
func Build(set *Set) (*Page, error) {
	gs := groups(set.Runs)
	keys := leakKeys(set.Runs)
	single := !set.Sweep
	page := &Page{Generated: time.Now().Format("2006-01-02 15:04")}
	abs, _ := filepath.Abs(set.Dir)
	if single {
		r := set.Runs[0]
		page.Title = "splitguard run — " + r.Setting.Label()
		page.Subtitle = abs
		page.KPIs = kpis(r, keys)
	} else {
		page.Title = "splitguard sweep"
		page.Subtitle = fmt.Sprintf("%s — %d runs, %d settings", abs, len(set.Runs), len(gs))
	}
	page.Notes = append(page.Notes, set.Notes...)
	for _, r := range set.Runs {
		if strings.HasPrefix(r.Status, "failed") {
			page.Notes = append(page.Notes, r.Name+": "+r.Status)
			continue
		}
		for _, n := range r.Notes {
			if single {
				page.Notes = append(page.Notes, n)
			} else {
				page.Notes = append(page.Notes, r.Name+": "+n)
			}
		}
	}
	names := make([]string, 0, len(set.Failed))
	for n := range set.Failed {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		page.Notes = append(page.Notes, fmt.Sprintf("%s: %s (no run directory)", n, set.Failed[n]))
	}
	ds := datasets(gs)
	multiDS := len(ds) > 1
	dsName := func(d string) string {
		if multiDS {
			return "_" + slug(d)
		}
		return ""
	}
	var cutKeys, allKeys []string
	for _, k := range keys {
		if _, l := splitKey(k); l == "cut" {
			cutKeys = append(cutKeys, k)
		}
		allKeys = append(allKeys, k)
	}
	addFig := func(s *Section, name, caption string, plots [][]*plot.Plot, w, h vg.Length, legendOut bool) error {
		pngB, svgB, err := render(plots, w, h, legendOut)
		if err != nil {
			return fmt.Errorf("report: figure %s: %w", name, err)
		}
		wide := len(plots[0]) > 1 // a grid of panels gets the page's whole width
		s.Figures = append(s.Figures, &Figure{Name: name, Caption: caption, PNG: pngB, SVG: svgB, Wide: wide})
		return nil
	}

	// Privacy–utility trade-off.
	trade := &Section{ID: "tradeoff", Title: "Privacy–utility trade-off",
		Lead: "Each point is one protection setting (mean over seeds), labelled with its parameter; one curve per method. " +
			"Left: q95 over training batches of |leak AUC − 0.5| (the papers' tables); right: raw q95 leak AUC (their figures). " +
			"Top: best test AUC (higher is better); bottom: final test loss."}
	for _, d := range ds {
		for _, k := range cutKeys {
			grid, n, err := tradeoffFigure(gs, d, k)
			if err != nil {
				return nil, err
			}
			if grid == nil {
				continue
			}
			caption := fmt.Sprintf("%s — %d settings", k, n)
			if multiDS {
				caption = d + ", " + caption
			}
			if err := addFig(trade, "tradeoff_"+slug(k)+dsName(d), caption, grid, 10*vg.Inch, 7.5*vg.Inch, false); err != nil {
				return nil, err
			}
		}
	}
	if len(trade.Figures) == 0 {
		trade.Empty = "No run has both a summary with a cut-layer leak figure and a test AUC yet."
	}

	// Leak AUC over training.
	prog := &Section{ID: "progress", Title: "Leak AUC over training",
		Lead: fmt.Sprintf("Per-batch leak AUC of the gradient (or embedding) the passive party sees, smoothed as the mean of up to %d equal-width bins of steps; "+
			"seeds of one setting are averaged. 0.5 (dotted) is chance; values below 0.5 are reported as they are (no flip).", maxBins)}
	for _, d := range ds {
		for _, k := range allKeys {
			p, n, err := progressFigure(gs, d, k, single)
			if err != nil {
				return nil, err
			}
			if p == nil {
				continue
			}
			caption := k
			if multiDS {
				caption = d + ", " + k
			}
			if !single {
				caption += fmt.Sprintf(" — %d settings", n)
			}
			if err := addFig(prog, "leak_"+slug(k)+dsName(d), caption, [][]*plot.Plot{{p}}, 8.5*vg.Inch, 4.2*vg.Inch, true); err != nil {
				return nil, err
			}
		}
	}
	if len(prog.Figures) == 0 {
		prog.Empty = "No per-batch leak AUC found (batches.jsonl missing, empty, or every batch of one class)."
	}

	// Per layer.
	lay := &Section{ID: "layers", Title: "Leakage per passive layer",
		Lead: "q95 over training batches of the leak AUC at each observable passive layer, from the input side (first) to the cut. " +
			"Attacks audited at only one layer are left out."}
	for _, d := range ds {
		grid, err := layersFigure(gs, d, keys, single)
		if err != nil {
			return nil, err
		}
		if grid == nil {
			continue
		}
		h := 4.2 * vg.Inch * vg.Length(len(grid))
		w := 8.5 * vg.Inch
		if len(grid[0]) > 1 {
			w = 12 * vg.Inch
			h = 3.8 * vg.Inch * vg.Length(len(grid))
		}
		caption := "q95 leak AUC per layer"
		if multiDS {
			caption = d + ", " + caption
		}
		if err := addFig(lay, "layers"+dsName(d), caption, grid, w, h, true); err != nil {
			return nil, err
		}
	}
	if len(lay.Figures) == 0 {
		lay.Empty = "No attack was audited at more than one passive layer (audit earlier layers with the attacks that support them, e.g. norm, cosine, spectral)."
	}

	// Marvell.
	mv := &Section{ID: "marvell", Title: "Marvell: sumKL, bound and measured leakage",
		Lead: "Top: the batch's sum of KL divergences between the two classes' gradient distributions, before noise and after Marvell's optimal noise (sumKL*). " +
			"Bottom: Theorem 1's worst-case leak-AUC bound ½ + √ε/2 − ε/8 (ε = sumKL*) against the leak AUC the norm and cosine attacks measured; all smoothed."}
	for _, g := range gs {
		if len(g.Runs) == 0 {
			continue
		}
		for _, r := range g.Runs[:1] { // first seed of the setting
			title := g.Setting.Label()
			if multiDS {
				title += " (" + g.Setting.Dataset + ")"
			}
			grid, err := marvellFigure(r, title)
			if err != nil {
				return nil, err
			}
			if grid == nil {
				continue
			}
			caption := title
			if len(g.Runs) > 1 {
				caption += " — run " + r.Name
			}
			if err := addFig(mv, "marvell_"+slug(g.Setting.Label())+dsName(g.Setting.Dataset), caption, grid, 8.5*vg.Inch, 7*vg.Inch, true); err != nil {
				return nil, err
			}
		}
	}
	if len(mv.Figures) == 0 {
		mv.Empty = "No Marvell run (no batch with a protection.sumKL figure)."
	}

	// Utility over training.
	ev := &Section{ID: "utility", Title: "Utility over training",
		Lead: "Test AUC and test loss at every evaluation (eval.jsonl; seeds averaged step by step) and the smoothed training loss per batch."}
	for _, d := range ds {
		grid, _, err := evalFigure(gs, d)
		if err != nil {
			return nil, err
		}
		if grid == nil {
			continue
		}
		caption := "test AUC, test loss and training loss"
		if multiDS {
			caption = d + ", " + caption
		}
		if err := addFig(ev, "utility"+dsName(d), caption, grid, 12*vg.Inch, 7*vg.Inch, true); err != nil {
			return nil, err
		}
	}
	if len(ev.Figures) == 0 {
		ev.Empty = "No evaluation found (eval.jsonl missing or empty)."
	}
	page.Sections = []*Section{trade, prog, lay, mv, ev}
	if single { // a lone run has no trade-off to speak of: put it last
		page.Sections = []*Section{prog, ev, lay, mv, trade}
	}
	page.Table = table(set, keys)
	return page, nil
}

func fmtF(v *float64, prec int) (text, key string) {
	if v == nil || math.IsNaN(*v) {
		return "—", ""
	}
	return strconv.FormatFloat(*v, 'f', prec, 64), strconv.FormatFloat(*v, 'g', -1, 64)
}

func kpis(r *Run, keys []string) []KPI {
	if r.Summary == nil {
		return nil
	}
	s := r.Summary
	t := func(v *float64, p int) string { x, _ := fmtF(v, p); return x }
	out := []KPI{{"best test AUC", t(s.TestAUCBest, 4)}, {"final test loss", t(s.TestLossFinal, 4)},
		{"steps", strconv.FormatInt(s.Steps, 10)}}
	if s.TestAUCSelected != nil {
		// The run's result comes first; the test curve's top is chosen by
		// looking at the test split.
		out[0] = KPI{"test curve top", t(s.TestAUCBest, 4)}
		out = append([]KPI{{"test AUC (selected on validation)", t(s.TestAUCSelected, 4)}}, out...)
	}
	for _, k := range keys {
		if _, l := splitKey(k); l != "cut" {
			continue
		}
		if st, ok := s.Leak[k]; ok {
			v := t(st.Q95Abs, 3)
			if c, key := fmtF(st.ChanceQ95Abs, 3); key != "" {
				v += " (chance " + c + ")"
			}
			out = append(out, KPI{"q95 |AUC−½| " + k, v})
		}
		if len(out) >= 7 {
			break
		}
	}
	return out
}

func rawNum(raw map[string]any, key string) *float64 {
	if v, ok := raw[key].(float64); ok {
		return &v
	}
	return nil
}

func table(set *Set, keys []string) Table {
	var t Table
	head := []string{"run", "dataset", "method", "param", "seed", "status", "best test AUC", "final test AUC",
		"final test loss", "final ACE", "steps", "seconds", "protect ms"}
	for _, h := range head {
		c := Cell{Text: h}
		if h == "run" || h == "dataset" || h == "method" || h == "param" || h == "status" {
			c.Class = "txt"
		}
		t.Head = append(t.Head, c)
	}
	for _, k := range keys {
		t.Head = append(t.Head, Cell{Text: k + " q95|·−½|"}, Cell{Text: k + " chance"}, Cell{Text: k + " q95"})
	}
	for _, r := range set.Runs {
		st := r.Setting
		status := r.Status
		cls := "txt"
		if strings.HasPrefix(status, "failed") {
			cls = "txt failed"
		}
		row := []Cell{
			{Text: r.Name, Sort: r.Name, Class: "txt"},
			{Text: st.Dataset, Sort: st.Dataset, Class: "txt"},
			{Text: st.Method, Sort: st.Method, Class: "txt", Color: theme.Hex(theme.MethodColor(st.Method))},
			{Text: st.Param, Sort: strconv.FormatFloat(st.Value, 'g', -1, 64), Class: "txt"},
			{Text: strconv.FormatUint(r.Seed(), 10), Sort: strconv.FormatUint(r.Seed(), 10)},
			{Text: status, Sort: status, Class: cls},
		}
		num := func(v *float64, p int) Cell { x, k := fmtF(v, p); return Cell{Text: x, Sort: k} }
		s := r.Summary
		if s == nil {
			s = &Summary{}
		}
		var steps *float64
		if r.Summary != nil {
			v := float64(s.Steps)
			steps = &v
		}
		row = append(row, num(s.TestAUCBest, 4), num(s.TestAUCFinal, 4), num(s.TestLossFinal, 4), num(s.ACEFinal, 4),
			num(steps, 0), num(s.Seconds, 1), num(rawNum(s.Raw, "protect_ms_mean"), 3))
		for _, k := range keys {
			l := s.Leak[k]
			row = append(row, num(l.Q95Abs, 4), num(l.ChanceQ95Abs, 4), num(l.Q95, 4))
		}
		t.Rows = append(t.Rows, row)
	}
	return t
}

func dataURI(b []byte) template.URL {
	return template.URL("data:image/png;base64," + base64.StdEncoding.EncodeToString(b))
}

var pageTmpl = template.Must(template.New("page").Funcs(template.FuncMap{
	"datauri": dataURI,
	"css":     func() template.CSS { return template.CSS(theme.CSS) },
}).Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}}</title>
<style>{{css}}</style>
</head>
<body data-figures="pending">
<header class="top"><h1>{{.Title}}</h1><span class="sub">{{.Subtitle}}</span></header>
<main>
{{if .Notes}}<div class="note" id="notes"><strong>Notes</strong><ul>{{range .Notes}}<li>{{.}}</li>{{end}}</ul></div>{{end}}
{{if .KPIs}}<div class="kpis">{{range .KPIs}}<div class="kpi"><div class="k">{{.Name}}</div><div class="v">{{.Value}}</div></div>{{end}}</div>{{end}}
{{range .Sections}}<section class="card" id="{{.ID}}"><h2>{{.Title}}</h2><p class="lead">{{.Lead}}</p>
{{if .Figures}}<div class="figs">{{range .Figures}}<figure{{if .Wide}} class="wide"{{end}}><img alt="{{.Caption}}" src="{{datauri .PNG}}" data-name="{{.Name}}">
<figcaption><span>{{.Caption}}</span><span><a href="{{.Name}}.png">PNG</a><a href="{{.Name}}.svg">SVG</a></span></figcaption></figure>
{{end}}</div>{{else}}<div class="note">{{.Empty}}</div>{{end}}
</section>
{{end}}
<section class="card" id="runs"><h2>Runs</h2><p class="lead">Every run's summary.json (click a column to sort). q95|·−½| is the 95% quantile over batches of |leak AUC − 0.5|; chance is what a score independent of the labels would give there over the same batches (sampling noise alone: about 0.17 at 128 rows with 10% positives), the floor to read q95|·−½| against; q95 the raw one. — means no value (missing file, null, or the run failed).</p>
<div class="tablewrap"><table class="runs" id="runs-table"><thead><tr>{{range $i, $h := .Table.Head}}<th class="{{$h.Class}}" data-col="{{$i}}">{{$h.Text}}</th>{{end}}</tr></thead>
<tbody>{{range .Table.Rows}}<tr>{{range .}}<td class="{{.Class}}" data-v="{{.Sort}}">{{if .Color}}<span class="swatch" style="background:{{.Color}}"></span>{{end}}{{.Text}}</td>{{end}}</tr>
{{end}}</tbody></table></div></section>
</main>
<footer>generated by splitguard report · {{.Generated}} · self-contained: figures are embedded; PNG and SVG files lie beside this page</footer>
<script>
(function () {
  var table = document.getElementById('runs-table');
  var ths = table.tHead.rows[0].cells;
  for (var i = 0; i < ths.length; i++) {
    ths[i].addEventListener('click', function () {
      var col = +this.dataset.col, asc = !this.classList.contains('sorted-asc');
      for (var j = 0; j < ths.length; j++) ths[j].classList.remove('sorted-asc', 'sorted-desc');
      this.classList.add(asc ? 'sorted-asc' : 'sorted-desc');
      var body = table.tBodies[0], rows = Array.prototype.slice.call(body.rows);
      rows.sort(function (a, b) {
        var x = a.cells[col].dataset.v, y = b.cells[col].dataset.v;
        if (x === '' && y === '') return 0;
        if (x === '') return 1;
        if (y === '') return -1;
        var nx = parseFloat(x), ny = parseFloat(y), c;
        if (!isNaN(nx) && !isNaN(ny) && String(nx) !== 'NaN') c = nx - ny; else c = x < y ? -1 : x > y ? 1 : 0;
        return asc ? c : -c;
      });
      rows.forEach(function (r) { body.appendChild(r); });
    });
  }
  function check() {
    var imgs = document.images, bad = [];
    for (var i = 0; i < imgs.length; i++) if (!(imgs[i].complete && imgs[i].naturalWidth > 0)) bad.push(imgs[i].dataset.name);
    document.body.dataset.figureCount = imgs.length;
    document.body.dataset.tableRows = table.tBodies[0].rows.length;
    document.body.dataset.figures = bad.length ? 'broken:' + bad.join(',') : 'ok';
  }
  if (document.readyState === 'complete') check(); else window.addEventListener('load', check);
})();
</script>
</body></html>
`))
