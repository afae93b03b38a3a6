package protect

import "math"

// Colors returns every registered defence's colour ([Spec.Color],
// 0xrrggbb) keyed by its name: the palette of the report and the live page
// (theme.PaletteOf).
func Colors() map[string]uint32 {
	regMu.RLock()
	defer regMu.RUnlock()
	out := make(map[string]uint32, len(registry))
	for name, s := range registry {
		out[name] = s.Color
	}
	return out
}

// Rank returns where the report places a method (a defence's name, or
// defences joined by "+"): a registered defence's [Spec.Rank] when it has
// one, else after every ranked defence (math.MaxInt); methods of equal
// rank go by name.
func Rank(method string) int {
	if s, ok := Lookup(method); ok && s.Rank > 0 {
		return s.Rank
	}
	return math.MaxInt
}

// colorOwner returns the name of the registered defence whose colour is
// c, or "" when none has it; the caller holds regMu.
func colorOwner(c uint32) string {
	for name, s := range registry {
		if s.Color == c {
			return name
		}
	}
	return ""
}
