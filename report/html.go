package report

import (
	"encoding/base64"
	"fmt"
	"html/template"
	"os"
	"path/filepath"
	"strings"

	"github.com/splitguard/splitguard/atomicfile"
	"github.com/splitguard/splitguard/report/theme"
)

// Section is one titled group of figures in the page.
type Section struct {
	ID, Title, Lead string
	Figures         []*Figure
	// Empty says why the section has no figure (shown instead).
	Empty string
	// Table, when set, is shown before the figures.
	Table *Table
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
{{with .Table}}<div class="tablewrap"><table class="runs"><thead><tr>{{range .Head}}<th class="{{.Class}}">{{.Text}}</th>{{end}}</tr></thead>
<tbody>{{range .Rows}}<tr>{{range .}}<td class="{{.Class}}" data-v="{{.Sort}}">{{if .Color}}<span class="swatch" style="background:{{.Color}}"></span>{{end}}{{.Text}}</td>{{end}}</tr>
{{end}}</tbody></table></div>{{end}}
{{if .Figures}}<div class="figs">{{range .Figures}}<figure{{if .Wide}} class="wide"{{end}}><img alt="{{.Caption}}" src="{{datauri .PNG}}" data-name="{{.Name}}">
<figcaption><span>{{.Caption}}</span><span><a href="{{.Name}}.png">PNG</a><a href="{{.Name}}.svg">SVG</a></span></figcaption></figure>
{{end}}</div>{{else if not .Table}}<div class="note">{{.Empty}}</div>{{end}}
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
