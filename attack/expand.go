package attack

import "slices"

// All is the attack list's word for "every registered attack but the
// expensive ones" (see [Expand]).
const All = "all"

// Expand resolves [All] in an attack list into every registered attack
// that is not expensive ([Needs.Expensive]), in name order, plus any named
// beside it; a list without it is returned as it is. It is the one
// expansion of "all": the in-process run, the active party's audit and
// the passive party's red team (package audit's label-free mode) all
// read it, so an attack registered in its own file joins every mode.
func Expand(names []string) []string {
	if !slices.Contains(names, All) {
		return names
	}
	var out []string
	for _, n := range Names() {
		if needs, _ := Describe(n); !needs.Expensive || slices.Contains(names, n) {
			out = append(out, n)
		}
	}
	return out
}
