package run

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/splitguard/splitguard/config"
)

// TestRowOrderDoesNotMatter: the same table with its rows in another
// order (reversed, shuffled) gives the same run: the same training losses
// and evaluations, bit for bit (before this test the vocabularies followed
// the rows' order and the runs differed).
func TestRowOrderDoesNotMatter(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	regions := []string{"north", "south", "east", "west", "centre", "isles"}
	var rows []string
	for i := range 1200 {
		x := rng.NormFloat64()
		r := rng.IntN(len(regions))
		y := 0
		if rng.Float64() < 1/(1+math.Exp(-(x+float64(r)-2.5))) {
			y = 1
		}
		rows = append(rows, fmt.Sprintf("u%05d,%.4f,%s,k%d,%d", rng.IntN(1_000_000)*1000+i, x, regions[r], rng.IntN(40), y))
	}
	orders := map[string][]string{"as written": rows, "reversed": slices.Clone(rows), "shuffled": slices.Clone(rows)}
	slices.Reverse(orders["reversed"])
	rng.Shuffle(len(rows), func(i, j int) {
		orders["shuffled"][i], orders["shuffled"][j] = orders["shuffled"][j], orders["shuffled"][i]
	})
	runs := map[string]string{}
	for name, rs := range orders {
		dir := t.TempDir()
		path := filepath.Join(dir, "table.csv")
		if err := os.WriteFile(path, []byte("id,x,region,shop,label\n"+strings.Join(rs, "\n")+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		cfg := config.Default()
		cfg.Data, cfg.Format, cfg.Label, cfg.IDCol = path, "csv", "label", "id"
		cfg.Out, cfg.Epochs, cfg.Baseline = filepath.Join(dir, "run"), 2, false
		cfg.Attacks = []string{"norm"}
		if _, err := Train(context.Background(), cfg, Options{}); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var rec []string
		for _, f := range []string{"batches.jsonl", "eval.jsonl"} {
			for _, line := range readLines(t, filepath.Join(cfg.Out, f)) {
				delete(line, "step_ms")
				delete(line, "protect_ms")
				delete(line, "seconds")
				rec = append(rec, fmt.Sprint(line))
			}
		}
		runs[name] = strings.Join(rec, "\n")
	}
	for _, name := range []string{"reversed", "shuffled"} {
		if runs[name] != runs["as written"] {
			a, b := strings.Split(runs["as written"], "\n"), strings.Split(runs[name], "\n")
			for i := range min(len(a), len(b)) {
				if a[i] != b[i] {
					t.Fatalf("rows %s: record %d differs:\n%s\nas written:\n%s", name, i, b[i], a[i])
				}
			}
			t.Fatalf("rows %s: %d records, as written %d", name, len(b), len(a))
		}
	}
}
