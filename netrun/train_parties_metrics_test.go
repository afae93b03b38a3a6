package netrun

import (
	"context"
	"errors"
	"log/slog"
	"math"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/splitguard/splitguard/rundir"
)

// TestPartiesMetricsEndpoint: the active party of a run with two passive
// parties serves Prometheus metrics; scraped when the last passive ends
// the run, every party's and the pair's leak gauge
// (splitguard_party_leak_auc{party,attack,layer}) holds the last batch's
// figure of batches.jsonl, and the step counter and test AUC those of
// the records.
func TestPartiesMetricsEndpoint(t *testing.T) {
	if testing.Short() {
		t.Skip("trains three parties")
	}
	root := t.TempDir()
	base := threePartyBase(synthFile(t, 900), filepath.Join(root, "inproc"))
	act, pas := threePartyConfigs(base, root, "")
	act.MetricsAddr = "127.0.0.1:0"
	var (
		mu    sync.Mutex
		url   string
		final series
		ends  int
		serr  error
	)
	on := func(msg string, attrs map[string]string) {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case msg == "metrics" && attrs["party"] == "active":
			url = attrs["url"]
		case msg == "a passive party ends the run":
			if ends++; ends == len(pas) {
				f, err := scrape(url)
				final, serr = flatten(f), err
			}
		}
	}
	log := slog.New(&hookHandler{next: testLogger(t).Handler(), on: on})
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	addr := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		_, err := RunActive(ctx, act, Options{Logger: log, Ready: func(a string) { addr <- a }})
		done <- err
	}()
	select {
	case a := <-addr:
		for k := range pas {
			pas[k].Addr = a
		}
	case err := <-done:
		t.Fatalf("active: %v", err)
	}
	errs := make([]error, len(pas))
	var wg sync.WaitGroup
	for k := range pas {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[k] = RunPassive(ctx, pas[k], Options{Logger: testLogger(t)})
		}()
	}
	wg.Wait()
	if err := errors.Join(append(errs, <-done)...); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if serr != nil || final == nil {
		t.Fatalf("no scrape at the run's end: %v", serr)
	}
	batches := readLines[rundir.BatchRecord](t, filepath.Join(act.Out, "batches.jsonl"))
	last := batches[len(batches)-1]
	if got := final["splitguard_step"]; got != float64(last.Step+1) {
		t.Errorf("splitguard_step %v, want %d", got, last.Step+1)
	}
	evals := readLines[rundir.EvalRecord](t, filepath.Join(act.Out, "eval.jsonl"))
	if got, want := final["splitguard_test_auc"], evals[len(evals)-1].TestAUC; got != want {
		t.Errorf("splitguard_test_auc %v, want %v", got, want)
	}
	if len(last.Parties) != 3 {
		t.Fatalf("the last batch audits %d views, want inf, noise and inf+noise", len(last.Parties))
	}
	n := 0
	for party, leak := range last.Parties {
		for k, v := range leak {
			at, layer, _ := strings.Cut(k, "/")
			key := "splitguard_party_leak_auc{attack=" + at + ",layer=" + layer + ",party=" + party + "}"
			got, ok := final[key]
			switch {
			case !ok:
				t.Errorf("%s missing from the scrape", key)
			case v == nil && !math.IsNaN(got), v != nil && got != *v:
				t.Errorf("%s = %v, the last batch's record %v", key, got, v)
			}
			n++
		}
	}
	if n == 0 {
		t.Fatal("no party leak in the last batch's record")
	}
	t.Logf("%d party leak gauges equal the last batch's record (step %d)", n, last.Step)
}
