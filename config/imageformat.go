package config

import (
	"maps"
	"slices"
	"strings"

	"github.com/splitguard/splitguard/data"
	// The built-in image sets register themselves with data, declaring
	// what a configuration of them may set (data.ImageFormat).
	_ "github.com/splitguard/splitguard/data/images"
)

// validateImageFormat checks the settings of an image set against what
// its format declares: its own test files or a test fraction, its classes,
// and the set-specific options it reads.
func (c *Config) validateImageFormat(f data.ImageFormat, bad func(string, ...any)) {
	if f.TestFiles && c.TestFrac != 0 {
		bad("%s uses its own test files: drop test fraction %g", f.Name, c.TestFrac)
	}
	if !f.TestFiles && (c.TestFrac <= 0 || c.TestFrac >= 1) {
		bad("test fraction %g, want a fraction in (0, 1)", c.TestFrac)
	}
	if f.Classes > 0 && (c.PositiveClass < 0 || c.PositiveClass >= f.Classes) {
		bad("positive class %d, want a %s class 0…%d", c.PositiveClass, f.Name, f.Classes-1)
	}
	takes := slices.Sorted(maps.Keys(f.Options))
	for _, o := range []struct {
		set bool
		key string
	}{{c.PosRate != 0, "pos_rate"}, {c.NegPerPos != 0, "neg_per_pos"}, {c.ImagePad, "image_pad"}} {
		if _, ok := f.Options[o.key]; o.set && !ok {
			bad("key %s does not apply to the image format %s, which takes %s", o.key, f.Name, orNone(takes), keyArg(o.key))
		}
	}
}

// orNone joins keys with " and ", or says "none of them".
func orNone(keys []string) string {
	if len(keys) == 0 {
		return "none of them"
	}
	return strings.Join(keys, " and ")
}

// orList joins names as "a, b or c".
func orList(names []string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}
