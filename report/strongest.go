package report

import (
	"math"
	"sort"
	"strconv"
	"strings"
)

// tunedSuffix ends a tuned attacker's name (attack.TunedSuffix): its leak
// key is "ATTACK_tuned/LAYER".
const tunedSuffix = "_tuned"

// tunedBase returns the key of the default attack that the leak key k's
// attacker tunes, and whether k is a tuned attacker's.
func tunedBase(k string) (string, bool) {
	at, layer := splitKey(k)
	base, ok := strings.CutSuffix(at, tunedSuffix)
	if !ok {
		return k, false
	}
	return base + "/" + layer, true
}

// tunedKey returns the leak key of the tuned attacker of the default
// attack's key k.
func tunedKey(k string) string {
	at, layer := splitKey(k)
	return at + tunedSuffix + "/" + layer
}

// sortAttackKeys orders leak keys by their default attack, each tuned
// attacker's key right after its default's.
func sortAttackKeys(keys []string) {
	sort.SliceStable(keys, func(i, j int) bool {
		bi, ti := tunedBase(keys[i])
		bj, tj := tunedBase(keys[j])
		if bi != bj {
			return bi < bj
		}
		return !ti && tj
	})
}

// nanLastDesc orders a before b (−1) when a is larger, NaN last; 0 on a
// tie.
func nanLastDesc(a, b float64) int {
	switch {
	case math.IsNaN(a) && math.IsNaN(b), a == b:
		return 0
	case math.IsNaN(b), a > b:
		return -1
	}
	return 1
}

// strongCell names the strongest attack against a setting with its AP.
func strongCell(sc settingScore) Cell {
	if sc.strongKey == "" {
		return Cell{Text: "—", Class: "txt"}
	}
	at, _ := splitKey(sc.strongKey)
	return Cell{Text: at + " (AP " + strconv.FormatFloat(sc.strongAP, 'f', 3, 64) + ")", Sort: strconv.FormatFloat(sc.strongAP, 'g', -1, 64), Class: "txt"}
}
