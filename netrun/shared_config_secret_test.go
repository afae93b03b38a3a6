package netrun

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/splitguard/splitguard/config"
	"github.com/splitguard/splitguard/protect"
)

// TestPartySecretFromKey: each party's secret comes from its own TLS key —
// stable for a key, different between the parties, 0 without TLS — and it
// changes the passports, so the peer cannot redraw them from the shared
// seed.
func TestPartySecretFromKey(t *testing.T) {
	t.Parallel()
	certs := newTestPKI(t)
	act, pas := partyConfigs(config.Default(), t.TempDir(), certs)
	a1, err := partySecret(&act)
	if err != nil {
		t.Fatal(err)
	}
	a2, _ := partySecret(&act)
	p1, err := partySecret(&pas)
	if err != nil {
		t.Fatal(err)
	}
	if a1 == 0 || p1 == 0 || a1 != a2 || a1 == p1 {
		t.Fatalf("secrets active %x (again %x), passive %x: want nonzero, stable and different", a1, a2, p1)
	}
	loop := act
	loop.InsecureLoopback = true
	if s, _ := partySecret(&loop); s != 0 {
		t.Errorf("insecure loopback: secret %x, want 0", s)
	}
	missing := act
	missing.CertDir, missing.Key = "", filepath.Join(t.TempDir(), "none.key")
	if _, err := partySecret(&missing); err == nil {
		t.Error("a missing key file gave a secret")
	}
	// prepare sets the secret from the key, or 0 where the options ask for
	// the in-process passports.
	for _, c := range []struct {
		opt  Options
		want uint64
	}{{Options{}, a1}, {Options{inProcessSecret: true}, 0}} {
		got := act
		got.Data = synthFile(t, 100)
		if err := got.prepare("active", c.opt); err != nil {
			t.Fatal(err)
		}
		if got.PartySecret != c.want {
			t.Errorf("prepare with inProcessSecret %v: secret %x, want %x", c.opt.inProcessSecret, got.PartySecret, c.want)
		}
	}

	// The passports of the top with the party's secret differ from those
	// the shared seed alone gives.
	state := func(secret uint64) []byte {
		l, err := protect.BuildInput(protect.Params{"fedpass_range": 4}, protect.InputOptions{CutDim: 6, LR: 1e-3, Seed: 9, Secret: secret})
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		if err := l.Save(&b); err != nil {
			t.Fatal(err)
		}
		return b.Bytes()
	}
	if bytes.Equal(state(0), state(a1)) {
		t.Error("the party secret does not change the passports")
	}
	if !bytes.Equal(state(a1), state(a2)) {
		t.Error("the same secret gave different passports")
	}
}
