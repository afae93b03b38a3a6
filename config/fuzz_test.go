package config

import "testing"

// FuzzConfigYAML feeds arbitrary text to the configuration decoder: an
// error or a configuration that Validate accepts or refuses, never a
// panic.
func FuzzConfigYAML(f *testing.F) {
	f.Add([]byte("batch: 64\nepochs: 2\nprotect: marvell\nmarvell_s: 2\nlayers: [16, 8]\n"))
	f.Add([]byte("attacks: [norm, cosine]\ncut: 1\n"))
	f.Add([]byte("- a\n- b\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		c := Default()
		if err := DecodeYAML(b, &c); err != nil {
			return
		}
		c.Resolve()
		_ = c.Validate()
	})
}
