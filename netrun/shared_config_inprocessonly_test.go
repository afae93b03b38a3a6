package netrun

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/splitguard/splitguard/config"
)

// TestInProcessOnlyKeysRefused: the keys of what runs in one process only
// — synthetic passive parties, a hijacking active party — are refused by
// both networked parties, naming the key.
func TestInProcessOnlyKeysRefused(t *testing.T) {
	root := t.TempDir()
	path := filepath.Join(root, "unused.txt")
	for _, c := range []struct {
		name string
		set  func(*Config)
		want string
	}{
		{"synth_parties", func(p *Config) { p.SynthParties, p.SynthRows, p.Data = 2, 100, "" }, "key synth_parties"},
		{"hijack", func(p *Config) { p.Hijack = config.HijackFSHA }, "key hijack"},
	} {
		act, pas := partyConfigs(smallConfig(path, filepath.Join(root, c.name)), root, "")
		c.set(&act)
		c.set(&pas)
		for role, p := range map[string]*Config{"active": &act, "passive": &pas} {
			if err := p.validate(role); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s with %s: %v, want a refusal naming %s", role, c.name, err, c.want)
			}
		}
	}
}
