package ui

import (
	"encoding/json"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
)

// TestFeedIntegrity: the detectors' scores handed to the feed at each
// evaluation come back through /api/state as one series per detector
// (NaN and ±Inf left out), sorted keys, the thresholds from Info beside
// them, and not in last_eval; the page has the section that draws them.
// A run without detectors has no integrity in its state.
func TestFeedIntegrity(t *testing.T) {
	f := NewFeed(Info{Title: "t", IntegrityStop: map[string]float64{"autoencoder_peak": 1.8}})
	srv := httptest.NewServer(f.Handler())
	defer srv.Close()
	f.Eval(Eval{Step: 0, TestAUC: 0.6, Integrity: map[string]float64{"autoencoder_peak": 1.1, "norm_shift": math.NaN()}})
	f.Eval(Eval{Step: 50, TestAUC: 0.7, Integrity: map[string]float64{"autoencoder_peak": 2.5, "norm_shift": 0.3, "outlier": math.Inf(1)}})
	f.Eval(Eval{Step: 100, TestAUC: 0.72})

	res, err := http.Get(srv.URL + "/api/state")
	if err != nil {
		t.Fatal(err)
	}
	var st State
	if err := json.NewDecoder(res.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if want := []string{"autoencoder_peak", "norm_shift"}; !slices.Equal(st.IntegrityKeys, want) {
		t.Errorf("integrity keys %v, want %v", st.IntegrityKeys, want)
	}
	if got := st.Integrity["autoencoder_peak"]; !slices.Equal(got, [][2]float64{{0, 1.1}, {50, 2.5}}) {
		t.Errorf("autoencoder_peak series %v, want (0, 1.1), (50, 2.5)", got)
	}
	if got := st.Integrity["norm_shift"]; !slices.Equal(got, [][2]float64{{50, 0.3}}) {
		t.Errorf("norm_shift series %v, want the one finite point (50, 0.3)", got)
	}
	if st.Info.IntegrityStop["autoencoder_peak"] != 1.8 {
		t.Errorf("thresholds %v, want autoencoder_peak 1.8", st.Info.IntegrityStop)
	}
	if st.LastEval == nil || st.LastEval.Integrity != nil || st.LastEval.TestAUC != 0.72 {
		t.Errorf("last_eval %+v: its scores belong in integrity", st.LastEval)
	}

	res, err = http.Get(srv.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(res.Body)
	res.Body.Close()
	for _, w := range []string{`id="s-integrity"`, "c-integrity", "integrity_keys", "integrity_stop", "integrity_alarm", "alarms at"} {
		if !strings.Contains(string(page), w) {
			t.Errorf("page lacks %q", w)
		}
	}

	plain := NewFeed(Info{Title: "t"})
	plain.Eval(Eval{Step: 0, TestAUC: 0.6})
	b, err := json.Marshal(plain)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), `"integrity`) {
		t.Errorf("a run without detectors: %s", b)
	}
}
