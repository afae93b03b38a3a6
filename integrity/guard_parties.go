package integrity

import (
	"fmt"
	"slices"
)

// IsCrossParty reports whether the named detector scores several passive
// parties' blocks of the embedding (a CrossPartyDetector, such as
// vflip), which a run of one passive party cannot feed.
func IsCrossParty(name string) bool {
	s, ok := detectors[name]
	if !ok {
		return false
	}
	_, cross := s.New().(CrossPartyDetector)
	return cross
}

// SetParties tells the guard the passive parties' names and each one's
// columns [from, to) of the combined embedding (aggregation concat). It
// must come before the first batch when a cross-party detector is on;
// such a detector refuses fewer than two parties, and a detector of one
// party's embedding is refused with several.
func (g *Guard) SetParties(names []string, cols [][2]int) error {
	if g == nil {
		return nil
	}
	for _, d := range g.dets {
		cp, ok := d.(CrossPartyDetector)
		if !ok {
			if len(cols) > 1 {
				return fmt.Errorf("integrity: detector %s scores one passive party's embedding, not %d parties' (cross-party detectors: %v)", d.Name(), len(cols), crossPartyNames())
			}
			continue
		}
		if err := cp.SetBlocks(names, cols); err != nil {
			return err
		}
		keys := make([]string, len(names))
		for k, n := range names {
			keys[k] = d.Name() + "/" + n
		}
		if g.partyKeys == nil {
			g.partyKeys = map[string][]string{}
		}
		g.partyKeys[d.Name()] = keys
	}
	g.parties = slices.Clone(names)
	return nil
}

// crossPartyNames lists the registered cross-party detectors, sorted.
func crossPartyNames() []string {
	var out []string
	for _, n := range DetectorNames() {
		if IsCrossParty(n) {
			out = append(out, n)
		}
	}
	return out
}

// partyScores adds a cross-party detector's per-party scores of the
// last batch to the guard's scores as "DETECTOR/PARTY".
func (g *Guard) partyScores(cp CrossPartyDetector) {
	keys := g.partyKeys[cp.Name()]
	for k, s := range cp.PartyScores() {
		g.scores[keys[k]] = s
	}
}

// suspect is the party a cross-party detector scored highest on the last
// batch.
func (g *Guard) suspect(cp CrossPartyDetector) string {
	top := 0
	for k, s := range cp.PartyScores() {
		if s > cp.PartyScores()[top] {
			top = k
		}
	}
	return g.parties[top]
}
