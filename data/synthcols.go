package data

import (
	"fmt"
	"slices"
)

// SynthColumns returns the synthetic table's feature columns by what
// they tell about the label: informative are the columns the generator
// draws differently for informative positives (the tilted categorical
// groups' columns and the integer columns whose mean or NA rate shifts),
// noise the columns drawn the same for both classes. Each list is in
// table order, categorical columns first.
func SynthColumns() (informative, noise []string) {
	tilted := map[int]bool{}
	for _, g := range synthGroups {
		for _, c := range g.cols {
			tilted[c] = true
		}
	}
	var infInts, noiseInts []string
	for j, s := range synthInts {
		name := fmt.Sprintf("I%d", j+1)
		if s.shift != 0 || s.naInform != s.na {
			infInts = append(infInts, name)
		} else {
			noiseInts = append(noiseInts, name)
		}
	}
	for j := range synthCats {
		name := fmt.Sprintf("C%d", j+1)
		if tilted[j] {
			informative = append(informative, name)
		} else {
			noise = append(noise, name)
		}
	}
	return append(informative, infInts...), append(noise, noiseInts...)
}

// SynthPartyColumns splits the synthetic table's columns over k passive
// parties and the active party by how informative they are: party 1
// holds every informative column (SynthColumns), and the noise columns
// are dealt in turn to parties 2…k and the active party (the last list),
// so that parties 2…k add nothing about the label. k must be at least 2.
func SynthPartyColumns(k int) ([][]string, error) {
	if k < 2 {
		return nil, fmt.Errorf("synth: %d passive parties, want at least 2", k)
	}
	inf, noise := SynthColumns()
	out := make([][]string, k+1)
	out[0] = slices.Clone(inf)
	for i, c := range noise {
		out[1+i%k] = append(out[1+i%k], c)
	}
	return out, nil
}
