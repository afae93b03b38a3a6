package ui

import (
	"encoding/json"
	"io"
	"net/http/httptest"
	"regexp"
	"testing"

	"github.com/splitguard/splitguard/protect"
	"github.com/splitguard/splitguard/report/theme"
)

// TestPageColoursEveryDefence reads the live page's colour map back out of
// the served page and checks it against the registry: every registered
// defence, with its spec's colour, and nothing else.
func TestPageColoursEveryDefence(t *testing.T) {
	srv := httptest.NewServer(NewFeed(Info{Title: "t", Method: "none"}).Handler())
	defer srv.Close()
	res, err := srv.Client().Get(srv.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	page, err := io.ReadAll(res.Body)
	res.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`var methodColors = (\{[^}]*\});`).FindSubmatch(page)
	if m == nil {
		t.Fatal("the page has no methodColors map")
	}
	var got map[string]string
	if err := json.Unmarshal(m[1], &got); err != nil {
		t.Fatalf("methodColors %s: %v", m[1], err)
	}
	specs := protect.Specs()
	for _, s := range specs {
		if want := theme.Hex(theme.RGB(s.Color)); got[s.Name] != want {
			t.Errorf("methodColors[%q] = %q, want %q", s.Name, got[s.Name], want)
		}
	}
	if len(got) != len(specs) {
		t.Errorf("methodColors has %d methods, the registry %d", len(got), len(specs))
	}
}
