package protect

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/splitguard/splitguard/configkey"
	"github.com/splitguard/splitguard/tensor"
)

// Param describes one parameter of a defence. Its Key is the config key
// (e.g. "marvell_s"); the command line's flag is the key with dashes
// ("--marvell-s").
type Param struct {
	Key  string
	Help string
	// Symbol names the parameter in legends ("s" in "marvell s=4").
	Symbol string
	// Int says the parameter takes whole numbers only.
	Int bool
	// Min and Max bound a value that is set (inclusive unless MinOpen or
	// MaxOpen); ±Inf for no bound.
	Min, Max         float64
	MinOpen, MaxOpen bool
}

// Check returns an error when v is not a valid value of the parameter.
func (p Param) Check(v float64) error {
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0):
		return fmt.Errorf("%s = %v, want a finite number", p.Key, v)
	case p.Int && v != math.Trunc(v):
		return fmt.Errorf("%s = %v, want a whole number", p.Key, v)
	case v < p.Min || (p.MinOpen && v == p.Min) || v > p.Max || (p.MaxOpen && v == p.Max):
		return fmt.Errorf("%s = %v, want a value in %s", p.Key, v, p.Range())
	}
	return nil
}

// Range renders the parameter's valid range, e.g. "(0, 0.5)" or "[0, ∞)".
func (p Param) Range() string {
	num := func(x float64) string {
		switch {
		case math.IsInf(x, 1):
			return "∞"
		case math.IsInf(x, -1):
			return "−∞"
		}
		return strconv.FormatFloat(x, 'g', -1, 64)
	}
	lo, hi := "[", "]"
	if p.MinOpen || math.IsInf(p.Min, -1) {
		lo = "("
	}
	if p.MaxOpen || math.IsInf(p.Max, 1) {
		hi = ")"
	}
	return lo + num(p.Min) + ", " + num(p.Max) + hi
}

// Params are defence parameter values keyed by [Param.Key]; a key that is
// absent is not set.
type Params map[string]float64

// Get returns the value of key, 0 when it is not set.
func (p Params) Get(key string) float64 { return p[key] }

// Has reports whether key is set.
func (p Params) Has(key string) bool { _, ok := p[key]; return ok }

// Role says how a defence combines with the others.
type Role int

const (
	// GradientRole protections perturb the gradient sent to the passive
	// party; a run has exactly one, chosen by name ([Reference] for no
	// noise).
	GradientRole Role = iota
	// AddOn defences combine with the gradient protection and are on when
	// their first parameter is set: a loss term added at the active party
	// (dCor) or noise on the training labels (label DP).
	AddOn
)

// LossTerm is an add-on defence's term of the active party's loss: it
// returns the term's value on a batch and adds its gradient with respect
// to the cut embedding e into grad.
type LossTerm interface {
	Name() string
	AddLossGrad(e *tensor.Matrix, y []float32, grad *tensor.Matrix) (float64, error)
}

// LabelNoise is an add-on defence that replaces the training labels the
// loss uses (evaluation keeps the true ones).
type LabelNoise interface {
	// Apply writes the labels the loss uses for examples ids with true
	// labels y into dst (grown as needed) and returns it.
	Apply(ids []uint64, y []uint8, dst []uint8) []uint8
}

// Spec is a defence's entry in the registry.
type Spec struct {
	Name string
	Role Role
	// Help is one line for the command line's help.
	Help string
	// Params are the defence's parameters; an AddOn is on when its first
	// parameter is set.
	Params []Param
	// Describe returns the legend parts of the defence at p ("s=4") and its
	// strength, the x value of the report's privacy–utility curves (nil:
	// every parameter that is set, as Symbol=value, and the first one's
	// value).
	Describe func(p Params) (parts []string, strength float64)
	// New builds a gradient protection (GradientRole).
	New func(p Params) (Protector, error)
	// NewLoss builds an add-on's loss term, NewLabels an add-on's label
	// noise (keyed by the run's seed); an AddOn sets one of them.
	NewLoss   func(p Params) (LossTerm, error)
	NewLabels func(p Params, seed uint64) (LabelNoise, error)
	// NewInput builds an add-on's input layer of the active party's top
	// model (MID); see [BuildInput].
	NewInput func(p Params, o InputOptions) (InputLayer, error)
	// NewCodec builds an add-on's label codec (CAE), keyed by the run's
	// seed; see [BuildCodec].
	NewCodec func(p Params, seed uint64) (LabelCodec, error)
	// NewPassiveOutput builds an add-on's layer at the passive party's
	// output (after the cut layer, before the embedding is sent): MID or
	// FedPass on the passive side; see [BuildPassiveOutput]. Its settings
	// are shared by both parties ([PassiveSettings]); its draws, keyed by
	// the run's seed, stay with the passive party.
	NewPassiveOutput func(p Params, o InputOptions) (PassiveOutput, error)
	// Account, when set, is the defence's privacy accountant: the privacy
	// a run with parameters p has spent once every example's protected
	// gradient row has been released at most releases times (e.g. "eps",
	// "delta"); summary.json records it.
	Account func(p Params, releases int64) (map[string]float64, error)
	// Bench is the representative setting `splitguard bench` times the
	// defence at (nil: see [BenchParams]).
	Bench Params
	// Color is the defence's colour in the report's figures and tables and
	// on the live page, as 0xrrggbb (CSS's #rrggbb; 0, black, is the
	// text's and means unset): every defence's its own, legible and
	// distinct by report/theme's Palette.Check (see [Colors]). A number,
	// not an image/color value, so that the parties link no image package.
	Color uint32
	// Rank places the defence in the report's tables and legends: ranked
	// defences (Rank > 0) by ascending rank, then the others by name (see
	// [Rank]).
	Rank int
	// Reference marks the one gradient protection without parameters that
	// protects nothing (see [Reference]); Register refuses a second.
	Reference bool
}

var (
	regMu    sync.RWMutex
	registry = map[string]*Spec{}
	byKey    = map[string]*Spec{}
)

// Register adds a defence to the registry. It panics when the name or a
// parameter key is empty or taken, or the spec has no constructor for its
// role: programming errors.
func Register(s Spec) {
	regMu.Lock()
	defer regMu.Unlock()
	switch {
	case s.Name == "":
		panic("protect: Register with an empty name")
	case registry[s.Name] != nil:
		panic(fmt.Sprintf("protect: %q registered twice", s.Name))
	case s.Role == GradientRole && s.New == nil:
		panic(fmt.Sprintf("protect: gradient protection %q without a constructor", s.Name))
	case s.Color == 0 || s.Color > 0xffffff:
		panic(fmt.Sprintf("protect: %q registered without a Color 0xrrggbb (got %#x)", s.Name, s.Color))
	case colorOwner(s.Color) != "":
		panic(fmt.Sprintf("protect: %q: colour %#06x is %q's", s.Name, s.Color, colorOwner(s.Color)))
	case s.Reference && (s.Role != GradientRole || len(s.Params) > 0):
		panic(fmt.Sprintf("protect: reference %q must be a gradient protection without parameters", s.Name))
	case s.Reference && reference != "":
		panic(fmt.Sprintf("protect: %q and %q both registered as the Reference", reference, s.Name))
	case s.Role == AddOn && (len(s.Params) == 0 || countSet(s.NewLoss != nil, s.NewLabels != nil, s.NewInput != nil, s.NewCodec != nil, s.NewPassiveOutput != nil) != 1):
		panic(fmt.Sprintf("protect: add-on %q needs a parameter and exactly one of NewLoss, NewLabels, NewInput, NewCodec and NewPassiveOutput", s.Name))
	}
	for _, p := range s.Params {
		if p.Key == "" || byKey[p.Key] != nil {
			panic(fmt.Sprintf("protect: %q: parameter key %q empty or taken", s.Name, p.Key))
		}
	}
	sp := s
	registry[s.Name] = &sp
	if s.Reference {
		reference = s.Name
	}
	for _, p := range s.Params {
		byKey[p.Key] = &sp
	}
}

// Lookup returns the spec registered under name.
func Lookup(name string) (*Spec, bool) {
	regMu.RLock()
	defer regMu.RUnlock()
	s, ok := registry[name]
	return s, ok
}

// Specs returns every registered spec: gradient protections first, each
// group sorted by name.
func Specs() []*Spec {
	regMu.RLock()
	out := make([]*Spec, 0, len(registry))
	for _, s := range registry {
		out = append(out, s)
	}
	regMu.RUnlock()
	sort.Slice(out, func(i, j int) bool {
		if out[i].Role != out[j].Role {
			return out[i].Role < out[j].Role
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// Names returns the registered gradient protections' names, sorted.
func Names() []string {
	var names []string
	for _, s := range Specs() {
		if s.Role == GradientRole {
			names = append(names, s.Name)
		}
	}
	return names
}

// AddOnNames returns the registered add-on defences' names, sorted.
func AddOnNames() []string {
	var names []string
	for _, s := range Specs() {
		if s.Role == AddOn {
			names = append(names, s.Name)
		}
	}
	return names
}

// ParamOwner returns the spec a parameter key belongs to.
func ParamOwner(key string) (*Spec, bool) {
	regMu.RLock()
	defer regMu.RUnlock()
	s, ok := byKey[key]
	return s, ok
}

// AllParams returns every registered parameter, in [Specs] order.
func AllParams() []Param {
	var out []Param
	for _, s := range Specs() {
		out = append(out, s.Params...)
	}
	return out
}

// Check validates a choice of gradient protection and parameters without
// building anything: the protection exists, every parameter is known,
// belongs to that protection or to an add-on, and is in its range.
func Check(name string, p Params) error {
	spec, ok := Lookup(name)
	if !ok || spec.Role != GradientRole {
		return fmt.Errorf("unknown protection %q (have %s)", name, strings.Join(Names(), ", "))
	}
	keys := make([]string, 0, len(p))
	for k := range p {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var errs []error
	for _, k := range keys {
		owner, ok := ParamOwner(k)
		if !ok {
			errs = append(errs, fmt.Errorf("unknown defence parameter %q", k))
			continue
		}
		if owner.Role == GradientRole && owner != spec {
			errs = append(errs, configkey.Keyed(fmt.Errorf("parameter %s (key %s) belongs to protection %s, but the protection (key protect) is %s: choose protection %s or drop the parameter", k, k, owner.Name, name, owner.Name), k, "protect"))
			continue
		}
		if first := owner.Params[0].Key; owner.Role == AddOn && k != first && !p.Has(first) {
			errs = append(errs, configkey.Keyed(fmt.Errorf("parameter %s of %s is set, but %s is off: key %s turns it on", k, owner.Name, owner.Name, first), first))
			continue
		}
		for _, par := range owner.Params {
			if par.Key == k {
				if err := par.Check(p[k]); err != nil {
					errs = append(errs, err)
				}
			}
		}
	}
	var inputs, codecs, outputs []string
	for _, s := range Specs() {
		if s.Role == AddOn && p.Has(s.Params[0].Key) {
			if s.NewInput != nil {
				inputs = append(inputs, s.Name)
			}
			if s.NewCodec != nil {
				codecs = append(codecs, s.Name)
			}
			if s.NewPassiveOutput != nil {
				outputs = append(outputs, s.Name)
			}
		}
	}
	if len(outputs) > 1 {
		errs = append(errs, fmt.Errorf("%s are all layers at the passive party's output; combine at most one", strings.Join(outputs, " and ")))
	}
	if len(inputs) > 1 {
		errs = append(errs, fmt.Errorf("%s are all input layers of the top model; combine at most one", strings.Join(inputs, " and ")))
	}
	if len(codecs) > 1 {
		errs = append(errs, fmt.Errorf("%s are all label codecs; combine at most one", strings.Join(codecs, " and ")))
	}
	return errors.Join(errs...)
}

// New returns a new instance of the gradient protection registered under
// name with parameters p (checked by [Check]).
func New(name string, p Params) (Protector, error) {
	if err := Check(name, p); err != nil {
		return nil, err
	}
	spec, _ := Lookup(name)
	pr, err := spec.New(p)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return pr, nil
}

// Set is every defence of a run, built from the registry.
type Set struct {
	// Protector perturbs the gradient (never nil).
	Protector Protector
	// Loss are the add-on loss terms, in registry order.
	Loss []LossTerm
	// Labels is the add-on label noise, or nil.
	Labels LabelNoise
}

// Build returns the defences of a run: the gradient protection name with
// parameters p, and every add-on whose first parameter p sets. seed keys
// the add-ons' draws.
func Build(name string, p Params, seed uint64) (*Set, error) {
	pr, err := New(name, p)
	if err != nil {
		return nil, err
	}
	s := &Set{Protector: pr}
	for _, spec := range Specs() {
		if spec.Role != AddOn || !p.Has(spec.Params[0].Key) {
			continue
		}
		switch {
		case spec.NewInput != nil, spec.NewCodec != nil, spec.NewPassiveOutput != nil:
			continue // part of a model: BuildInput, BuildCodec, BuildPassiveOutput
		case spec.NewLoss != nil:
			t, err := spec.NewLoss(p)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", spec.Name, err)
			}
			s.Loss = append(s.Loss, t)
		default:
			if s.Labels != nil {
				return nil, fmt.Errorf("%s: a second label-noise defence; combine at most one", spec.Name)
			}
			l, err := spec.NewLabels(p, seed)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", spec.Name, err)
			}
			s.Labels = l
		}
	}
	return s, nil
}

// Legend is how figures and tables name a run's defences.
type Legend struct {
	// Method names the defences joined by "+", e.g. "marvell+dcor"
	// ([Reference] without any): the key of the report's colours.
	Method string
	// Parts are the parameter settings, e.g. ["s=4", "α=0.005"].
	Parts []string
	// Strength is the first defence's strength (NaN without parameters).
	Strength float64
	// Text is the whole legend, e.g. "marvell s=4 + dcor α=0.005".
	Text string
}

// Describe returns the legend of a run's defences: the gradient
// protection name with parameters p, and every add-on p turns on.
func Describe(name string, p Params) Legend {
	l := Legend{Strength: math.NaN()}
	var methods, texts []string
	add := func(spec *Spec, fallback string) {
		parts, strength := []string(nil), math.NaN()
		if spec != nil {
			parts, strength = spec.describe(p)
		}
		methods = append(methods, fallback)
		texts = append(texts, strings.TrimSpace(fallback+" "+strings.Join(parts, " ")))
		l.Parts = append(l.Parts, parts...)
		if math.IsNaN(l.Strength) {
			l.Strength = strength
		}
	}
	spec, _ := Lookup(name)
	if !IsReference(name) {
		add(spec, name)
	}
	for _, s := range Specs() {
		if s.Role == AddOn && p.Has(s.Params[0].Key) {
			add(s, s.Name)
		}
	}
	if len(methods) == 0 {
		methods, texts = []string{Reference()}, []string{Reference()}
	}
	l.Method = strings.Join(methods, "+")
	l.Text = strings.Join(texts, " + ")
	return l
}

func (s *Spec) describe(p Params) ([]string, float64) {
	if s.Describe != nil {
		return s.Describe(p)
	}
	var parts []string
	strength := math.NaN()
	for _, par := range s.Params {
		if p.Has(par.Key) {
			sym := par.Symbol
			if sym == "" {
				sym = par.Key
			}
			parts = append(parts, sym+"="+strconv.FormatFloat(p[par.Key], 'g', 4, 64))
			if math.IsNaN(strength) {
				strength = p[par.Key]
			}
		}
	}
	return parts, strength
}

// Account returns the privacy spent by the run's defences — the gradient
// protection name with parameters p, and every add-on p turns on — once
// every example's protected gradient row has been released at most
// releases times, from each defence's accountant ([Spec.Account]); keys
// are prefixed with the defence's name ("grad_dp_eps"). It returns nil
// when no defence has an accountant.
func Account(name string, p Params, releases int64) (map[string]float64, error) {
	var out map[string]float64
	for _, s := range Specs() {
		if s.Account == nil || (s.Role == GradientRole && s.Name != name) || (s.Role == AddOn && !p.Has(s.Params[0].Key)) {
			continue
		}
		m, err := s.Account(p, releases)
		if err != nil {
			return nil, fmt.Errorf("%s: privacy accountant: %w", s.Name, err)
		}
		for k, v := range m {
			if out == nil {
				out = map[string]float64{}
			}
			out[s.Name+"_"+k] = v
		}
	}
	return out, nil
}

func countSet(flags ...bool) int {
	n := 0
	for _, f := range flags {
		if f {
			n++
		}
	}
	return n
}

// BuildInput returns the input layer of the active party's top model that
// parameters p turn on (MID), or nil when none is on. At most one may be.
func BuildInput(p Params, o InputOptions) (InputLayer, error) {
	return buildOne(p, "input-layer defence", func(s *Spec) (InputLayer, bool, error) {
		if s.NewInput == nil {
			return nil, false, nil
		}
		l, err := s.NewInput(p, o)
		return l, true, err
	})
}

// BuildCodec returns the label codec that parameters p turn on (CAE), or
// nil when none is on. At most one may be.
func BuildCodec(p Params, seed uint64) (LabelCodec, error) {
	return buildOne(p, "label codec", func(s *Spec) (LabelCodec, bool, error) {
		if s.NewCodec == nil {
			return nil, false, nil
		}
		c, err := s.NewCodec(p, seed)
		return c, true, err
	})
}

// buildOne builds the one add-on of a kind that p turns on: build says
// whether a spec is of the kind and builds it.
func buildOne[T interface{ Name() string }](p Params, kind string, build func(*Spec) (T, bool, error)) (T, error) {
	var out, zero T
	found := ""
	for _, spec := range Specs() {
		if spec.Role != AddOn || !p.Has(spec.Params[0].Key) {
			continue
		}
		v, ok, err := build(spec)
		if !ok {
			continue
		}
		if err != nil {
			return zero, fmt.Errorf("%s: %w", spec.Name, err)
		}
		if found != "" {
			return zero, fmt.Errorf("%s: a second %s after %s; combine at most one", spec.Name, kind, found)
		}
		out, found = v, spec.Name
	}
	return out, nil
}

// BenchParams returns the setting the step benchmark times spec at: its
// Bench field when set; nil for a gradient protection that builds without
// parameters (its default, e.g. grad_avg over the whole batch) or a
// defence without any; else its first parameter (which turns an add-on on)
// at 1, or its lower bound plus 1, or the middle of its range, the first
// of these the parameter accepts.
func BenchParams(spec *Spec) Params {
	if spec.Bench != nil {
		return maps.Clone(spec.Bench)
	}
	if len(spec.Params) == 0 {
		return nil
	}
	if spec.Role == GradientRole && spec.New != nil {
		if _, err := spec.New(Params{}); err == nil {
			return nil
		}
	}
	first := spec.Params[0]
	for _, v := range []float64{1, first.Min + 1, (first.Min + first.Max) / 2} {
		if first.Check(v) == nil {
			return Params{first.Key: v}
		}
	}
	return Params{first.Key: first.Min}
}
