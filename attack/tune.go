package attack

import (
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"strings"
)

// Param is one free parameter of a [Tunable] attack: what the attacker may
// choose and within which range. A parameter is numeric (Min ≤ v ≤ Max,
// drawn uniformly, or log-uniformly with Log, rounded with Int) or a
// choice among named options (Choices, the value being the option's
// index).
type Param struct {
	// Key names the parameter in the tuned attacker's records, e.g.
	// "metric".
	Key string
	// Help says what it changes.
	Help string
	// Min and Max bound a numeric parameter (both included).
	Min, Max float64
	// Log draws the parameter log-uniformly (Min > 0).
	Log bool
	// Int rounds the parameter to an integer.
	Int bool
	// Choices names the options of a categorical parameter; its value is
	// an option's index.
	Choices []string
	// Default is the value the registered attack uses.
	Default float64
}

// Values are parameter settings keyed by [Param.Key].
type Values map[string]float64

// String writes the values in key order, choices by name, e.g.
// "metric=inner sign=-1".
func (v Values) String() string { return v.format(nil) }

func (v Values) format(params []Param) string {
	var parts []string
	for _, p := range append(params, Param{Key: SignKey}) {
		x, ok := v[p.Key]
		if !ok {
			continue
		}
		if i := int(x); len(p.Choices) > 0 && i >= 0 && i < len(p.Choices) {
			parts = append(parts, p.Key+"="+p.Choices[i])
		} else {
			parts = append(parts, fmt.Sprintf("%s=%.4g", p.Key, x))
		}
	}
	return strings.Join(parts, " ")
}

// Tunable is implemented by an attack with free parameters; its plug-in
// file declares them (Params) and applies a setting (SetParams). The
// tuned attacker ([Tuned]) searches them; an attack that is not Tunable
// is tuned in its orientation only ([SignKey]).
type Tunable interface {
	// Params declares the free parameters, their ranges and defaults.
	Params() []Param
	// SetParams applies a setting of every declared parameter; it returns
	// an error naming a key that is missing or out of range.
	SetParams(v Values) error
}

// SignKey is the tuned attacker's own parameter, beside the attack's: the
// orientation of the score (+1 as the attack gives it, −1 reversed).
const SignKey = "sign"

// check returns an error naming the first parameter of params whose value
// in v is missing or outside its range.
func checkValues(name string, params []Param, v Values) error {
	for _, p := range params {
		x, ok := v[p.Key]
		if !ok {
			return fmt.Errorf("attack %s: parameter %s not set", name, p.Key)
		}
		lo, hi := p.Min, p.Max
		if len(p.Choices) > 0 {
			lo, hi = 0, float64(len(p.Choices)-1)
			if x != math.Trunc(x) {
				return fmt.Errorf("attack %s: parameter %s = %v is not an option's index", name, p.Key, x)
			}
		}
		if !(x >= lo && x <= hi) {
			return fmt.Errorf("attack %s: parameter %s = %v outside [%v, %v]", name, p.Key, x, lo, hi)
		}
	}
	return nil
}

// Defaults returns the default setting of params.
func Defaults(params []Param) Values {
	v := Values{}
	for _, p := range params {
		v[p.Key] = p.Default
	}
	return v
}

// draw returns a random value of p.
func (p Param) draw(r *rand.Rand) float64 {
	if len(p.Choices) > 0 {
		return float64(r.IntN(len(p.Choices)))
	}
	var x float64
	if p.Log {
		lo, hi := math.Log(p.Min), math.Log(p.Max)
		x = math.Exp(lo + r.Float64()*(hi-lo))
	} else {
		x = p.Min + r.Float64()*(p.Max-p.Min)
	}
	if p.Int {
		x = math.Round(x)
	}
	return min(max(x, p.Min), p.Max)
}

// streamTune is the PCG stream of the tuned attacker's candidates; the
// attack's name is mixed into the seed, so an attack's candidates do not
// depend on which other attacks run.
const streamTune = 0x7e11ed

// Candidates returns the budget settings of params that the tuned attacker
// of the named attack tries: the defaults first, then budget − 1 settings
// drawn independently (uniform, log-uniform or uniform over the choices)
// from a PCG seeded by seed mixed with the FNV-1a hash of name. Without
// parameters it returns the defaults alone. budget < 1 counts as 1.
func Candidates(name string, params []Param, budget int, seed uint64) []Values {
	out := []Values{Defaults(params)}
	if len(params) == 0 {
		return out
	}
	h := fnv.New64a()
	h.Write([]byte(name))
	r := rand.New(rand.NewPCG(seed^h.Sum64(), streamTune))
	for len(out) < budget {
		v := Values{}
		for _, p := range params {
			v[p.Key] = p.draw(r)
		}
		out = append(out, v)
	}
	return out
}

// BestCandidate returns the index and orientation of the best of the
// candidates whose mean validation AUCs are means (NaN: never validated):
// the largest |mean − ½|, oriented +1 when mean ≥ ½ and −1 below. Ties go
// to the earlier candidate (the defaults are first) and to +1; with no
// validated candidate it returns (0, +1).
func BestCandidate(means []float64) (int, float64) {
	best, sign, gap := 0, 1.0, -1.0
	for i, m := range means {
		if math.IsNaN(m) {
			continue
		}
		if g := math.Abs(m - 0.5); g > gap {
			best, gap = i, g
			sign = 1
			if m < 0.5 {
				sign = -1
			}
		}
	}
	return best, sign
}

// pairAUC is the exact AUC of scores over the rows idx (with labels y,
// 0 or 1) that are scored: the share of (positive, negative) pairs the
// positive wins, ties ½. ok is false without a scored row of each class.
func pairAUC(scores []float64, scored []bool, idx []int, y []uint8) (auc float64, ok bool) {
	var wins float64
	var pairs int
	for a, i := range idx {
		if y[a] != 1 || !scored[i] {
			continue
		}
		for b, j := range idx {
			if y[b] != 0 || !scored[j] {
				continue
			}
			pairs++
			switch {
			case scores[i] > scores[j]:
				wins++
			case scores[i] == scores[j]:
				wins += 0.5
			}
		}
	}
	if pairs == 0 {
		return 0, false
	}
	return wins / float64(pairs), true
}
