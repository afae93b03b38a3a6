package archcheck

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/splitguard/splitguard/"

// importGraph returns, for each package of the module (relative path),
// the module's packages it imports, from go list.
func importGraph(t *testing.T) map[string][]string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("the go tool is not on PATH")
	}
	cmd := exec.Command(goTool, "list", "-f", "{{.ImportPath}}:{{join .Imports \" \"}}", "./...")
	cmd.Dir = filepath.Join("..", "..")
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("go list: %v: %s", err, ee.Stderr)
		}
		t.Fatalf("go list: %v", err)
	}
	g := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		pkg, imps, _ := strings.Cut(line, ":")
		pkg = strings.TrimPrefix(pkg, module)
		var own []string
		for _, imp := range strings.Fields(imps) {
			if rest, ok := strings.CutPrefix(imp, module); ok {
				own = append(own, rest)
			}
		}
		g[pkg] = own
	}
	return g
}

var (
	codeName  = regexp.MustCompile("`([^`]+)`")
	remark    = regexp.MustCompile(`\s*\([^)]*\)`)
	segmentRE = regexp.MustCompile(`^([\w/]+)(?: also)?:\s*(.*)$`)
)

// row is one line of the package table: its packages and, per package,
// the imports it states.
type row struct {
	line    int
	pkgs    []string
	imports map[string][]string
	any     bool // "everything": not checked
}

// parseTable reads the package table of ARCHITECTURE.md. An imports cell
// is "—" or a comma-separated list, with remarks in parentheses; a row of
// several packages may give some of them their own list ("grpcnet also:
// …" adds to the row's list, "theme: —" replaces it), naming each by the
// last element of its path.
func parseTable(t *testing.T, path string) []row {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var rows []row
	sc := bufio.NewScanner(f)
	inTable := false
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if strings.HasPrefix(line, "| package |") {
			inTable = true
			continue
		}
		if !inTable || strings.HasPrefix(line, "|---") {
			continue
		}
		if !strings.HasPrefix(line, "|") {
			break
		}
		cells := strings.Split(strings.Trim(line, "|"), " | ")
		if len(cells) != 3 {
			t.Fatalf("%s:%d: %d cells, want package | concern | imports", path, n, len(cells))
		}
		r := row{line: n, imports: map[string][]string{}}
		for _, m := range codeName.FindAllStringSubmatch(cells[0], -1) {
			r.pkgs = append(r.pkgs, m[1])
		}
		cell := strings.TrimSpace(remark.ReplaceAllString(cells[2], ""))
		if cell == "everything" {
			r.any = true
			rows = append(rows, r)
			continue
		}
		var common []string
		own := map[string][]string{}
		also := map[string]bool{}
		for _, seg := range strings.Split(cell, ";") {
			seg = strings.TrimSpace(seg)
			name, list := "", seg
			if m := segmentRE.FindStringSubmatch(seg); m != nil && !strings.Contains(m[1], ",") {
				name, list = m[1], m[2]
				also[name] = strings.Contains(seg, " also:")
			}
			var pkgs []string
			if list != "—" {
				for _, p := range strings.Split(list, ",") {
					pkgs = append(pkgs, strings.TrimSpace(p))
				}
			}
			if name == "" {
				common = pkgs
			} else {
				own[name] = pkgs
			}
		}
		for _, p := range r.pkgs {
			base := p[strings.LastIndex(p, "/")+1:]
			list, named := own[base]
			if !named {
				list, named = own[p]
			}
			switch {
			case !named:
				r.imports[p] = common
			case also[base] || also[p]:
				r.imports[p] = append(slices.Clone(common), list...)
			default:
				r.imports[p] = list
			}
		}
		rows = append(rows, r)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return rows
}

// TestArchitectureTable checks every row of the table against go list,
// and that every package of the module has a row.
func TestArchitectureTable(t *testing.T) {
	path := filepath.Join("..", "..", "ARCHITECTURE.md")
	graph := importGraph(t)
	rows := parseTable(t, path)
	listed := map[string]bool{}
	for _, r := range rows {
		for _, p := range r.pkgs {
			listed[p] = true
			got, ok := graph[p]
			if !ok {
				t.Errorf("%s:%d: package %s is not in the module", path, r.line, p)
				continue
			}
			if r.any {
				continue
			}
			want := slices.Sorted(slices.Values(r.imports[p]))
			have := slices.Sorted(slices.Values(got))
			if !slices.Equal(want, have) {
				t.Errorf("%s:%d: %s imports %s; the table says %s", path, r.line, p, strings.Join(have, ", "), strings.Join(want, ", "))
			}
		}
	}
	for p := range graph {
		if !listed[p] {
			t.Errorf("%s: no row for package %s (imports: %s)", path, p, strings.Join(graph[p], ", "))
		}
	}
}
