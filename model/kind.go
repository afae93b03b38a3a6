package model

import (
	"fmt"
	"strings"

	"github.com/splitguard/splitguard/data"

	"github.com/splitguard/splitguard/internal/registry"
)

// Settings are what a model kind's constructors read: the deep table
// models' Config and the CNN's CNNConfig, both filled from a run's
// configuration; each kind reads its own.
type Settings struct {
	Table Config
	CNN   CNNConfig
}

// Kind is a split model's entry in the registry: a name (key model), the
// data it reads and its two halves' constructors. Each kind is one file
// that registers itself in init() (wdl, mlp, cnn).
type Kind struct {
	// Name is the kind's name (key model).
	Name string
	// Help is one line for the command line's help.
	Help string
	// Images says that the kind reads images (data.Features.Image), not
	// table columns.
	Images bool
	// Wide says that the top reads the active party's own features (the
	// wide part of Wide&Deep), which NewTop then is given.
	Wide bool
	// Served says that `active serve` / `passive score` serve the kind.
	Served bool
	// NewBottom builds the passive party's half over its features x.
	NewBottom func(s Settings, x *data.Features) (Bottom, error)
	// NewTop builds the active party's half; x is the active party's own
	// features for a Wide kind (nil otherwise).
	NewTop func(s Settings, x *data.Features) (Top, error)
	// CutDim is the width of the cut embedding under s, 0 when s names no
	// valid cut.
	CutDim func(s Settings) int
}

var kinds registry.Map[Kind]

// RegisterKind adds a model kind to the registry. It panics when the name
// is empty or taken or a constructor is missing: programming errors.
func RegisterKind(k Kind) {
	if k.Name == "" || k.NewBottom == nil || k.NewTop == nil || k.CutDim == nil {
		panic(fmt.Sprintf("model: RegisterKind(%q): want a name, NewBottom, NewTop and CutDim", k.Name))
	}
	if !kinds.Add(k.Name, k) {
		panic(fmt.Sprintf("model: kind %q registered twice", k.Name))
	}
}

// LookupKind returns the model kind registered under name.
func LookupKind(name string) (Kind, bool) { return kinds.Lookup(name) }

// Kinds returns the registered kinds' names, sorted.
func Kinds() []string { return kinds.Names() }

// KindsWhere returns the names of the registered kinds for which keep
// holds, sorted.
func KindsWhere(keep func(Kind) bool) []string {
	var out []string
	for _, n := range Kinds() {
		if k, _ := LookupKind(n); keep(k) {
			out = append(out, n)
		}
	}
	return out
}

// OrList joins names as "a, b or c", for messages that list choices.
func OrList(names []string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// tableBottom builds a deep table model's bottom (wdl, mlp) over x.
func tableBottom(name string) func(Settings, *data.Features) (Bottom, error) {
	return func(s Settings, x *data.Features) (Bottom, error) {
		if x.Image != nil {
			return nil, fmt.Errorf("model %s reads tables but the data are %d×%d×%d images; the images need model %s",
				name, x.Image.Height, x.Image.Width, x.Image.Channels, OrList(KindsWhere(func(k Kind) bool { return k.Images })))
		}
		return asBottom(NewBottom(s.Table, SchemaOf(x)))
	}
}

// tableCutDim is a deep table model's cut width: layer Cut's.
func tableCutDim(s Settings) int {
	if s.Table.Cut < 1 || s.Table.Cut > len(s.Table.Widths) {
		return 0
	}
	return s.Table.Widths[s.Table.Cut-1]
}

// asBottom and asTop return a constructor's result as the interface, nil
// (not a nil pointer in it) with an error.
func asBottom[B Bottom](b B, err error) (Bottom, error) {
	if err != nil {
		return nil, err
	}
	return b, nil
}

func asTop[T Top](t T, err error) (Top, error) {
	if err != nil {
		return nil, err
	}
	return t, nil
}
