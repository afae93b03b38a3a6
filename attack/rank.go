package attack

import (
	"math"
	"sort"
)

// Ranked is implemented by an attack that asks for a place of its own in
// what reports and progress lines show; its plug-in file implements it
// (norm, the papers' main attack, is ranked 1). An attack that is not
// Ranked follows every ranked one, by name.
type Ranked interface {
	// Rank places the attack: ranked attacks (Rank > 0) by ascending
	// rank; the first ranked attack's cut-layer leak is the one a progress
	// line shows.
	Rank() int
}

// ranks remembers [Rank] by name (a progress line asks at every step);
// register forgets a name it registers. Guarded by registryMu.
var ranks = map[string]int{}

// Rank returns the rank of the attack registered under name (its
// [Ranked.Rank] when it has one above 0), or math.MaxInt for an attack
// that is not ranked, a tuned attacker ("norm_tuned") or a name nobody
// registered.
func Rank(name string) int {
	registryMu.RLock()
	r, ok := ranks[name]
	registryMu.RUnlock()
	if ok {
		return r
	}
	r = math.MaxInt
	if p, err := NewPlugin(name); err == nil {
		if rk, ok := p.(Ranked); ok && rk.Rank() > 0 {
			r = rk.Rank()
		}
	}
	registryMu.Lock()
	ranks[name] = r
	registryMu.Unlock()
	return r
}

// SortByRank orders attack names by [Rank], then by name.
func SortByRank(names []string) {
	sort.SliceStable(names, func(i, j int) bool {
		if ri, rj := Rank(names[i]), Rank(names[j]); ri != rj {
			return ri < rj
		}
		return names[i] < names[j]
	})
}
