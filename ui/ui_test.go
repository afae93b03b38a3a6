package ui

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"
)

func fp(v float64) *float64 { return &v }

func TestSeriesDecimation(t *testing.T) {
	// Feed y = x for x = 1..n: every kept point must be the mean of a run
	// of consecutive inputs, i.e. lie on y = x, and the count stay bounded.
	s := newSeries()
	n := 10 * MaxPoints
	for x := 1; x <= n; x++ {
		s.add(float64(x), float64(x), true)
	}
	pts := s.points()
	if len(pts) > MaxPoints || len(pts) < MaxPoints/4 {
		t.Errorf("%d points, want between %d and %d", len(pts), MaxPoints/4, MaxPoints)
	}
	for i, p := range pts {
		if math.Abs(p[0]-p[1]) > 1e-9 {
			t.Fatalf("point %d = %v, want on y = x", i, p)
		}
		if i > 0 && p[0] <= pts[i-1][0] {
			t.Fatalf("x not increasing at %d", i)
		}
	}
	// The stride is a power of two and the points cover the whole range.
	if pts[0][0] > float64(s.stride) || pts[len(pts)-1][0] < float64(n-s.stride) {
		t.Errorf("range %v..%v, stride %d", pts[0], pts[len(pts)-1], s.stride)
	}
}

func TestSeriesBuckets(t *testing.T) {
	tests := []struct {
		name   string
		stride int
		ys     []float64
		ok     []bool
		want   [][2]float64
	}{
		{"stride 1", 1, []float64{0.5, 0.7}, []bool{true, true}, [][2]float64{{1, 0.5}, {2, 0.7}}},
		// stride 2: buckets {1,2} and {3,4}
		{"stride 2", 2, []float64{0.4, 0.6, 0.8, 1.0}, []bool{true, true, true, true}, [][2]float64{{1.5, 0.5}, {3.5, 0.9}}},
		// a null in the second bucket: its mean is of the one defined value
		{"null", 2, []float64{0.4, 0.6, 0, 1.0}, []bool{true, true, false, true}, [][2]float64{{1.5, 0.5}, {4, 1.0}}},
		// an all-null bucket gives no point; an open bucket is provisional
		{"all null + open", 2, []float64{0, 0, 0.3}, []bool{false, false, true}, [][2]float64{{3, 0.3}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := newSeries()
			s.stride = tc.stride
			for i, y := range tc.ys {
				s.add(float64(i+1), y, tc.ok[i])
			}
			got := s.points()
			if len(got) != len(tc.want) {
				t.Fatalf("points %v, want %v", got, tc.want)
			}
			for i := range got {
				if math.Abs(got[i][0]-tc.want[i][0]) > 1e-12 || math.Abs(got[i][1]-tc.want[i][1]) > 1e-12 {
					t.Errorf("points %v, want %v", got, tc.want)
				}
			}
		})
	}
}

func TestHandlerPageAndState(t *testing.T) {
	f := NewFeed(Info{Title: "out/run1", Protect: "marvell s=4", Method: "marvell", TotalSteps: 10})
	srv := httptest.NewServer(f.Handler())
	defer srv.Close()

	res, err := http.Get(srv.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(res.Body)
	res.Body.Close()
	for _, w := range []string{"<canvas", "c-leak", "c-auc", "c-loss", "EventSource", "marvell s=4", `"#0072b2"`} {
		if !strings.Contains(string(page), w) {
			t.Errorf("page lacks %q", w)
		}
	}
	for _, bad := range []string{"http://", "https://", "<script src"} {
		if strings.Contains(string(page), bad) {
			t.Errorf("page loads something external: %q", bad)
		}
	}
	if r, _ := http.Get(srv.URL + "/nope"); r.StatusCode != http.StatusNotFound {
		t.Errorf("/nope: %d, want 404", r.StatusCode)
	}

	f.Batch(Batch{Step: 1, Loss: 0.7, Leak: map[string]*float64{"norm/cut": fp(0.9), "cosine/cut": nil}})
	f.Batch(Batch{Step: 2, Loss: 0.6, Leak: map[string]*float64{"norm/cut": fp(0.8), "cosine/cut": fp(0.6)}})
	f.Eval(Eval{Step: 2, TestAUC: 0.71, TestLoss: 0.5, ACE: 0.01})
	res, err = http.Get(srv.URL + "/api/state")
	if err != nil {
		t.Fatal(err)
	}
	var st State
	if err := json.NewDecoder(res.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if st.Step != 2 || len(st.Loss) != 2 || st.Loss[1] != [2]float64{2, 0.6} {
		t.Errorf("state step %d loss %v", st.Step, st.Loss)
	}
	if got := st.Leak["cosine/cut"]; len(got) != 1 || got[0] != [2]float64{2, 0.6} {
		t.Errorf("cosine/cut %v, want the one defined point", got)
	}
	if strings.Join(st.Keys, ",") != "cosine/cut,norm/cut" || st.LastEval == nil || st.LastEval.TestAUC != 0.71 {
		t.Errorf("keys %v last eval %+v", st.Keys, st.LastEval)
	}
	if st.Info.TotalSteps != 10 || st.Done {
		t.Errorf("info %+v done %v", st.Info, st.Done)
	}
}

// readEvent reads one server-sent event's data line of type "state".
func readEvent(t *testing.T, br *bufio.Reader) State {
	t.Helper()
	var event string
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("reading events: %v", err)
		}
		line = strings.TrimRight(line, "\n")
		switch {
		case strings.HasPrefix(line, "event: "):
			event = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: ") && event == "state":
			var st State
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &st); err != nil {
				t.Fatal(err)
			}
			return st
		}
	}
}

func TestEvents(t *testing.T) {
	f := NewFeed(Info{Title: "x"})
	srv := httptest.NewServer(f.Handler())
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+"/events", nil)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if ct := res.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Errorf("content type %q", ct)
	}
	br := bufio.NewReader(res.Body)
	if st := readEvent(t, br); st.Step != 0 {
		t.Errorf("first event step %d, want the initial state", st.Step)
	}
	f.Batch(Batch{Step: 7, Loss: 0.5, Leak: map[string]*float64{"norm/cut": fp(0.75)}})
	st := readEvent(t, br)
	if st.Step != 7 || st.LastLeak["norm/cut"] == nil || *st.LastLeak["norm/cut"] != 0.75 {
		t.Errorf("event after a batch: step %d last %v", st.Step, st.LastLeak)
	}
	f.Done(errors.New("boom"))
	st = readEvent(t, br)
	if !st.Done || st.Error != "boom" {
		t.Errorf("event after Done: done %v error %q", st.Done, st.Error)
	}
}

func TestStartLoopbackAndShutdown(t *testing.T) {
	f := NewFeed(Info{Title: "x"})
	ctx, cancel := context.WithCancel(context.Background())
	s, err := Start(ctx, ":0", f) // no host: loopback
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(s.URL, "http://127.0.0.1:") {
		t.Errorf("URL %s, want loopback", s.URL)
	}
	// an open event stream must not keep the server from stopping
	go func() {
		if res, err := http.Get(s.URL + "events"); err == nil {
			io.Copy(io.Discard, res.Body)
			res.Body.Close()
		}
	}()
	res, err := http.Get(s.URL)
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("GET %s: %v %v", s.URL, err, res)
	}
	res.Body.Close()
	time.Sleep(50 * time.Millisecond)
	cancel()
	done := make(chan error, 1)
	go func() { done <- s.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Wait: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("server did not stop")
	}
	if _, err := Start(context.Background(), "nonsense", f); err == nil || !strings.Contains(err.Error(), "host:port") {
		t.Errorf("bad address: %v", err)
	}
}

// TestFeedPartiesAndEvalExtras: a batch's per-party leaks become series
// "PARTY · ATTACK/LAYER" beside the run's own, and an evaluation's party
// gains and feature figures become the per-evaluation series (a nil or
// NaN value skipped), in sorted key order.
func TestFeedPartiesAndEvalExtras(t *testing.T) {
	f := NewFeed(Info{Title: "t"})
	v := func(x float64) *float64 { return &x }
	f.Batch(Batch{Step: 0, Loss: 0.7, Leak: map[string]*float64{"norm/cut": v(0.9)},
		Parties: map[string]map[string]*float64{"bank": {"norm/cut": v(0.8)}, "bank+telco": {"norm/cut": nil}}})
	f.Eval(Eval{Step: 0, TestAUC: 0.7, PartyGain: map[string]*float64{"bank": v(0.05), "telco": nil},
		Features: map[string]float64{"inverse_linear/r2_mean": 0.4, "bad": math.NaN()}})
	f.Eval(Eval{Step: 10, TestAUC: 0.75, PartyGain: map[string]*float64{"bank": v(0.07)}})
	st := f.Snapshot()
	wantKeys := []string{"bank · norm/cut", "bank+telco · norm/cut", "norm/cut"}
	if !slices.Equal(st.Keys, wantKeys) {
		t.Errorf("leak keys %v, want %v", st.Keys, wantKeys)
	}
	if got := st.LastLeak["bank · norm/cut"]; got == nil || *got != 0.8 {
		t.Errorf("bank's last leak %v, want 0.8", got)
	}
	if got, ok := st.LastLeak["bank+telco · norm/cut"]; !ok || got != nil {
		t.Errorf("the pair's undefined leak: %v, %v", got, ok)
	}
	wantExtra := []string{"contribution · bank", "features · inverse_linear/r2_mean"}
	if !slices.Equal(st.ExtraKeys, wantExtra) {
		t.Errorf("per-evaluation keys %v, want %v", st.ExtraKeys, wantExtra)
	}
	if got := st.EvalExtra["contribution · bank"]; len(got) != 2 || got[0] != [2]float64{0, 0.05} || got[1] != [2]float64{10, 0.07} {
		t.Errorf("bank's contribution series %v", got)
	}
	if st.LastEval == nil || st.LastEval.PartyGain != nil {
		t.Errorf("last_eval %+v: its per-party figures belong in eval_extra", st.LastEval)
	}
}
