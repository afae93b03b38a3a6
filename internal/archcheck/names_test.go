package archcheck_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/splitguard/splitguard/attack"
	"github.com/splitguard/splitguard/attack/feature"
	"github.com/splitguard/splitguard/data"
	_ "github.com/splitguard/splitguard/data/images" // registers the image sets
	"github.com/splitguard/splitguard/integrity"
	"github.com/splitguard/splitguard/model"
	"github.com/splitguard/splitguard/protect"
)

// pluginNames returns every registered plug-in name with the registry it
// comes from.
func pluginNames() map[string][]string {
	out := map[string][]string{}
	add := func(kind string, names []string) {
		for _, n := range names {
			out[n] = append(out[n], kind)
		}
	}
	add("attack", attack.Names())
	add("feature attack", feature.Names())
	for _, s := range protect.Specs() {
		add("defence", []string{s.Name})
		for _, p := range s.Params {
			add("parameter of defence "+s.Name, []string{p.Key})
		}
	}
	add("free-riding mode", integrity.TamperNames())
	add("integrity detector", integrity.DetectorNames())
	add("image format", data.ImageFormats())
	add("table format", data.TableFormats())
	add("model", model.Kinds())
	return out
}

// nameAllowed lists the files outside a plug-in's own that may spell its
// name as a string literal, each with the reason: the same word meaning
// something else, or a default a user sees.
var nameAllowed = map[string]string{
	// defaults of a configuration and of a flag, the values a user gets
	// without choosing
	"config/config.go|criteo":                          "the default table format",
	"config/config.go|wdl":                             "the default model",
	"cmd/splitguard/bench.go|wdl":                      "the default of bench --model, and its step harness's key",
	"cmd/splitguard/bench.go|cnn":                      "the key of bench --model's CNN step harness",
	"config/config.go|norm":                            "the default attack",
	"cmd/splitguard/attack_features.go|inverse_linear": "the default of --feature-attacks",
	// the demonstration's chosen example
	"cmd/splitguard/demo.go|norm":      "the demo's attacks",
	"cmd/splitguard/demo.go|cosine":    "the demo's attacks",
	"cmd/splitguard/demo.go|marvell":   "the demo's defence",
	"cmd/splitguard/demo.go|marvell_s": "the demo's defence's strength",
	// the same word, another meaning
	"attack/hint.go|cosine":                  "the hint attack's cosine scoring",
	"attack/similarity.go|cosine":            "the similarity attack's cosine metric",
	"data/labels.go|none":                    "a missing-value token of a table",
	"data/imageset.go|none":                  "no image format is linked",
	"netrun/shared_config.go|none":           "no passive-side defence",
	"integrity/guard.go|none":                "no detector (key detectors: [none])",
	"transport/transport.go|none":            "a tensor encoding's absence",
	"transport/grpcnet/grpcnet.go|none":      "no compression",
	"transport/wire/compression.go|none":     "no wire compression (key wire_compression)",
	"cmd/splitguard/attack.go|fashion-mnist": "a flag's name",
	"report/fig_marvell.go|marvell":          "the Marvell figure's section, its own file",
	"cmd/splitguard/marvell.go|marvell":      "the command that solves Marvell's problem",
}

// TestPluginNamesStayInTheirFiles checks that no non-test Go source spells
// a registered plug-in's name (an attack, a defence or one of its
// parameters, a free-riding mode or detector, an image or table format, a
// model) as a string literal, or an attack's in a leak key ("norm/cut"),
// outside the file that registers it, except where nameAllowed says why:
// what a plug-in is lives in its one file, and the rest of the code asks
// the registry.
func TestPluginNamesStayInTheirFiles(t *testing.T) {
	names := pluginNames()
	if len(names) < 30 {
		t.Fatalf("only %d registered names: a registry is not linked", len(names))
	}
	root := filepath.Join("..", "..")
	type hit struct{ file, name string }
	var hits []hit
	own := map[string][]string{}    // name -> files registering it
	consts := map[string][]string{} // name -> files declaring a constant of it
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); n == "testdata" || n == "proto" || (strings.HasPrefix(n, ".") && path != root) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		lits := func(n ast.Node, visit func(string)) {
			ast.Inspect(n, func(n ast.Node) bool {
				if b, ok := n.(*ast.BasicLit); ok && b.Kind == token.STRING {
					if s, err := strconv.Unquote(b.Value); err == nil {
						// a leak key "ATTACK/LAYER" names the attack
						if a, _, ok := strings.Cut(s, "/"); ok && slices.Contains(names[a], "attack") {
							s = a
						}
						if names[s] != nil {
							visit(s)
						}
					}
				}
				return true
			})
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.CallExpr:
				if isRegister(n.Fun) {
					lits(n, func(s string) { own[s] = append(own[s], rel) })
				}
			case *ast.GenDecl:
				// a constant holding a plug-in's name declares it
				// (data.FormatCriteo): its file is the plug-in's too
				if n.Tok == token.CONST {
					lits(n, func(s string) { consts[s] = append(consts[s], rel) })
				}
			}
			return true
		})
		lits(f, func(s string) { hits = append(hits, hit{rel, s}) })
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// a defence's parameter lives in the files of its defence
	for _, sp := range protect.Specs() {
		for _, p := range sp.Params {
			own[p.Key] = append(own[p.Key], own[sp.Name]...)
		}
	}
	// a constant holding a plug-in's name (data.FormatCriteo) declares it
	// when the name is registered through constants only, or the constant
	// sits in the package of a file that registers the name
	for name, files := range consts {
		if len(own[name]) == 0 {
			own[name] = files
			continue
		}
		for _, f := range files {
			for _, o := range own[name] {
				if filepath.Dir(o) == filepath.Dir(f) {
					own[name] = append(own[name], f)
					break
				}
			}
		}
	}
	used, seen := map[string]bool{}, map[string]bool{}
	for _, h := range hits {
		key := h.file + "|" + h.name
		if slices.Contains(own[h.name], h.file) || seen[key] {
			continue
		}
		if _, ok := nameAllowed[key]; ok {
			used[key] = true
			continue
		}
		seen[key] = true
		t.Errorf("%s spells %q (a registered %s) outside its plug-in's file (%s): ask the registry, or declare the fact in the plug-in",
			h.file, h.name, strings.Join(names[h.name], ", "), strings.Join(slices.Compact(slices.Sorted(slices.Values(own[h.name]))), ", "))
	}
	for key, why := range nameAllowed {
		if !used[key] {
			t.Errorf("nameAllowed[%q] (%s) is not needed any more: drop it", key, why)
		}
	}
}

// isRegister reports whether a call's function is a registration
// (protect.Register, attack.RegisterEpoch, data.RegisterImageFormat, a
// package's own registerX helper …).
func isRegister(fun ast.Expr) bool {
	var name string
	switch f := fun.(type) {
	case *ast.Ident:
		name = f.Name
	case *ast.SelectorExpr:
		name = f.Sel.Name
	}
	return strings.HasPrefix(strings.ToLower(name), "register")
}
