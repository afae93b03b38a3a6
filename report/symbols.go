package report

import (
	"strings"

	"github.com/splitguard/splitguard/protect"
)

// q95Note defines q95 on the figures that show it.
const q95Note = "q95 — the 95th percentile of a run's per-batch figure over its training batches (seeds of one setting averaged)."

// symbolNotes defines, one note per symbol, the parameter symbols of the
// settings of dataset ("s" in "s=4"), in order of first appearance, with
// each parameter's help from the protections' registry; symbols the
// registry does not know are left out.
func symbolNotes(gs []*group, dataset string) []string {
	help := map[string]string{}
	for _, p := range protect.AllParams() {
		if _, ok := help[p.Symbol]; !ok && p.Symbol != "" {
			help[p.Symbol] = p.Help
		}
	}
	var notes []string
	seen := map[string]bool{}
	for _, g := range gs {
		if g.Setting.Dataset != dataset || g.Setting.Param == "" {
			continue
		}
		for _, part := range strings.Split(g.Setting.Param, ", ") {
			sym, _, ok := strings.Cut(part, "=")
			if !ok || seen[sym] || help[sym] == "" {
				continue
			}
			seen[sym] = true
			notes = append(notes, sym+" — "+help[sym])
		}
	}
	return notes
}
