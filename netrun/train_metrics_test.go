package netrun

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/splitguard/splitguard/metrics"
	"github.com/splitguard/splitguard/rundir"
	"github.com/splitguard/splitguard/transport/grpcnet"
)

// hookHandler is a slog.Handler that calls on for every record (with the
// record's attributes, those added by With included) and then forwards
// it to next.
type hookHandler struct {
	next  slog.Handler
	attrs []slog.Attr
	on    func(msg string, attrs map[string]string)
}

func (h *hookHandler) Enabled(ctx context.Context, l slog.Level) bool { return true }

func (h *hookHandler) Handle(ctx context.Context, r slog.Record) error {
	attrs := map[string]string{}
	for _, a := range h.attrs {
		attrs[a.Key] = a.Value.String()
	}
	r.Attrs(func(a slog.Attr) bool {
		attrs[a.Key] = a.Value.String()
		return true
	})
	h.on(r.Message, attrs)
	if h.next.Enabled(ctx, r.Level) {
		return h.next.Handle(ctx, r)
	}
	return nil
}

func (h *hookHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &hookHandler{next: h.next.WithAttrs(as), attrs: append(slices.Clone(h.attrs), as...), on: h.on}
}

func (h *hookHandler) WithGroup(name string) slog.Handler {
	return &hookHandler{next: h.next.WithGroup(name), attrs: h.attrs, on: h.on}
}

// scrape GETs url and parses the Prometheus text format.
func scrape(url string) (map[string]*dto.MetricFamily, error) {
	resp, err := http.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return nil, fmt.Errorf("GET %s: %s: %s", url, resp.Status, b)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	return p.TextToMetricFamilies(resp.Body)
}

// series is one scraped sample: its value, or for a histogram its count.
type series map[string]float64

// flatten maps "name{k=v,...}" (labels sorted by name, as the text format
// writes them) to the sample's value; histograms give name_count.
func flatten(fams map[string]*dto.MetricFamily) series {
	out := series{}
	for name, f := range fams {
		for _, m := range f.GetMetric() {
			var ls []string
			for _, l := range m.GetLabel() {
				ls = append(ls, l.GetName()+"="+l.GetValue())
			}
			key := name
			if len(ls) > 0 {
				key += "{" + strings.Join(ls, ",") + "}"
			}
			switch {
			case m.Gauge != nil:
				out[key] = m.GetGauge().GetValue()
			case m.Counter != nil:
				out[key] = m.GetCounter().GetValue()
			case m.Histogram != nil:
				out[key+"_count"] = float64(m.GetHistogram().GetSampleCount())
				out[key+"_sum"] = m.GetHistogram().GetSampleSum()
			}
		}
	}
	return out
}

// nearestRankQ95 is the nearest-rank 95% quantile: the ⌈0.95·n⌉-th
// smallest value.
func nearestRankQ95(x []float64) float64 {
	s := slices.Clone(x)
	slices.Sort(s)
	return s[int(math.Ceil(0.95*float64(len(s))))-1]
}

// expectFromFiles is what the metrics must show after the first steps
// training steps, computed from the run's own records: the step count, the
// last batch's loss and leak AUCs, the running 95% quantile of each leak
// series, and the candidates for the test AUC (the last evaluation at a
// step before steps, and the one at steps, which may or may not have run).
func expectFromFiles(t *testing.T, batches []rundir.BatchRecord, evals []rundir.EvalRecord, steps int) (want series, testAUC []float64) {
	t.Helper()
	if steps > len(batches) {
		t.Fatalf("the metrics report %d steps, batches.jsonl has %d lines", steps, len(batches))
	}
	want = series{"splitguard_step": float64(steps)}
	if steps == 0 {
		return want, nil
	}
	last := batches[steps-1]
	want["splitguard_train_loss"] = last.Loss
	all := map[string][]float64{}
	for _, b := range batches[:steps] {
		for k, v := range b.Leak {
			if v != nil {
				all[k] = append(all[k], *v)
			}
		}
	}
	for k, v := range last.Leak {
		at, layer, _ := strings.Cut(k, "/")
		key := fmt.Sprintf("splitguard_leak_auc{attack=%s,layer=%s}", at, layer)
		if v == nil {
			want[key] = math.NaN()
		} else {
			want[key] = *v
		}
		if len(all[k]) > 0 {
			want[fmt.Sprintf("splitguard_leak_auc_q95{attack=%s,layer=%s}", at, layer)] = nearestRankQ95(all[k])
		}
	}
	testAUC = []float64{0} // no evaluation yet
	for _, e := range evals {
		switch {
		case e.Step < int64(steps):
			testAUC[0] = e.TestAUC
		case e.Step == int64(steps):
			testAUC = append(testAUC, e.TestAUC)
		}
	}
	return want, testAUC
}

// sameFloat is equality with NaN equal to NaN.
func sameFloat(a, b float64) bool { return a == b || (math.IsNaN(a) && math.IsNaN(b)) }

// TestMetricsEndpoint runs both parties on loopback with the active party
// serving Prometheus metrics on an ephemeral port, scrapes /metrics over
// HTTP during the run and once more when the passive party ends it (all
// steps done, the endpoint still up), parses the text format and checks
// every metric docs/DEPLOYMENT.md promises against the run's own files: the step
// counter against batches.jsonl's line count, the loss and per-attack leak
// AUCs against its last line, the running 95% quantiles against the
// nearest-rank quantile of its leak columns (and summary.json), the test
// AUC and loss against eval.jsonl's last line, the bytes against the
// passive party's counters. Each mid-run scrape must show one step's
// values, never a mix of two.
func TestMetricsEndpoint(t *testing.T) {
	path := synthFile(t, 1500)
	root := t.TempDir()
	base := smallConfig(path, filepath.Join(root, "inproc"))
	base.Attacks = []string{"norm", "cosine", "spectral"}
	act, pas := partyConfigs(base, root, "")
	act.InsecureLoopback, pas.InsecureLoopback = true, true
	act.MetricsAddr = "127.0.0.1:0"

	var (
		mu       sync.Mutex
		url      string
		final    map[string]*dto.MetricFamily
		finalErr error
	)
	urlReady := make(chan struct{})
	on := func(msg string, attrs map[string]string) {
		switch {
		case msg == "metrics" && attrs["party"] == "active":
			mu.Lock()
			url = attrs["url"]
			mu.Unlock()
			close(urlReady)
		case msg == "the passive party ends the run":
			// Called by the active party's Shutdown handler: every step
			// and evaluation is done and the endpoint still serves.
			mu.Lock()
			u := url
			mu.Unlock()
			f, err := scrape(u)
			mu.Lock()
			final, finalErr = f, err
			mu.Unlock()
		}
	}
	log := slog.New(&hookHandler{next: testLogger(t).Handler(), on: on})

	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	addr := make(chan string, 1)
	type result struct {
		s   *rundir.Summary
		err error
	}
	done := make(chan result, 1)
	go func() {
		s, err := RunActive(ctx, act, Options{Logger: log, Ready: func(a string) { addr <- a }})
		done <- result{s, err}
	}()
	select {
	case pas.Addr = <-addr:
	case r := <-done:
		t.Fatalf("active: %v", r.err)
	}
	<-urlReady

	// Scrape while the run goes on; check each scrape against the files
	// read after it (the files are written before the gauges are set).
	stop := make(chan struct{})
	polled := make(chan error, 1)
	var mid []series
	go func() {
		for {
			select {
			case <-stop:
				polled <- nil
				return
			default:
			}
			f, err := scrape(url)
			if errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
				errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				// The active party has closed its endpoint: the passive
				// ended the run between two scrapes. Nothing to check.
				polled <- nil
				return
			}
			if err != nil {
				polled <- err
				return
			}
			mid = append(mid, flatten(f))
			time.Sleep(2 * time.Millisecond)
		}
	}()
	res, err := RunPassive(ctx, pas, Options{Logger: log})
	if err != nil {
		t.Fatalf("passive: %v", err)
	}
	close(stop)
	if err := <-polled; err != nil {
		t.Fatalf("scraping during the run: %v", err)
	}
	r := <-done
	if r.err != nil {
		t.Fatalf("active: %v", r.err)
	}
	mu.Lock()
	defer mu.Unlock()
	if finalErr != nil || final == nil {
		t.Fatalf("no scrape when the passive party ended the run: %v", finalErr)
	}

	batches := readLines[rundir.BatchRecord](t, filepath.Join(act.Out, "batches.jsonl"))
	evals := readLines[rundir.EvalRecord](t, filepath.Join(act.Out, "eval.jsonl"))
	if len(batches) == 0 || len(evals) < 2 {
		t.Fatalf("%d batches, %d evaluations", len(batches), len(evals))
	}

	// Names and types.
	for name, typ := range map[string]dto.MetricType{
		"splitguard_step": dto.MetricType_GAUGE, "splitguard_train_loss": dto.MetricType_GAUGE,
		"splitguard_leak_auc": dto.MetricType_GAUGE, "splitguard_leak_auc_q95": dto.MetricType_GAUGE,
		"splitguard_test_auc": dto.MetricType_GAUGE, "splitguard_test_loss": dto.MetricType_GAUGE,
		"splitguard_protection_info": dto.MetricType_GAUGE, "splitguard_step_seconds": dto.MetricType_HISTOGRAM,
		"splitguard_step_seconds_last": dto.MetricType_GAUGE, "splitguard_bytes_sent_total": dto.MetricType_COUNTER,
		"splitguard_bytes_received_total": dto.MetricType_COUNTER, "splitguard_exchanges_total": dto.MetricType_COUNTER,
	} {
		f := final[name]
		if f == nil {
			t.Errorf("metric %s missing", name)
			continue
		}
		if f.GetType() != typ {
			t.Errorf("metric %s is a %v, want a %v", name, f.GetType(), typ)
		}
	}

	// The page that documents the metrics names every one the endpoint
	// serves, and no other.
	page, err := os.ReadFile(filepath.Join("..", "docs", "DEPLOYMENT.md"))
	if err != nil {
		t.Fatal(err)
	}
	documented := map[string]bool{}
	for _, m := range regexp.MustCompile(`\bsplitguard_[a-z0-9_]+`).FindAllString(string(page), -1) {
		documented[m] = true
	}
	for name := range final {
		if !documented[name] {
			t.Errorf("metric %s is served but docs/DEPLOYMENT.md does not name it", name)
		}
	}
	// Served only by runs that have them (each checked by its own test).
	conditional := map[string]string{
		"splitguard_party_leak_auc":  "several passive parties (TestPartiesMetricsEndpoint)",
		"splitguard_integrity_score": "integrity detectors (TestMetricsIntegrityScores)",
	}
	for name := range documented {
		if final[name] == nil && conditional[name] == "" {
			t.Errorf("docs/DEPLOYMENT.md names metric %s, which is not served", name)
		}
	}

	// Final values against the files.
	got := flatten(final)
	want, aucs := expectFromFiles(t, batches, evals, len(batches))
	lastEval := evals[len(evals)-1]
	want["splitguard_test_auc"] = lastEval.TestAUC
	want["splitguard_test_loss"] = lastEval.TestLoss
	want["splitguard_protection_info{protect=marvell}"] = 1
	want["splitguard_step_seconds_count"] = float64(len(batches))
	want["splitguard_bytes_received_total"] = float64(res.Stats.BytesSent)
	// The counters cover every call, control calls included. The final
	// scrape runs inside the Shutdown handler: the request has arrived,
	// the reply (an empty message: its 5-byte frame header) is not sent.
	want["splitguard_bytes_sent_total"] = float64(res.Stats.BytesReceived - 5)
	if !slices.Contains(aucs, lastEval.TestAUC) {
		t.Errorf("the last evaluation (step %d) is not at the last step %d", lastEval.Step, len(batches))
	}
	for _, at := range base.Attacks {
		for _, k := range []string{"splitguard_leak_auc", "splitguard_leak_auc_q95"} {
			if _, ok := want[fmt.Sprintf("%s{attack=%s,layer=cut}", k, at)]; !ok {
				t.Errorf("no %s for attack %s in batches.jsonl", k, at)
			}
		}
	}
	for k, w := range want {
		g, ok := got[k]
		if !ok {
			t.Errorf("%s missing from the scrape", k)
		} else if !sameFloat(g, w) {
			t.Errorf("%s = %v, want %v (from the run's files)", k, g, w)
		}
	}
	var sum map[string]any
	if err := json.Unmarshal(mustRead(t, filepath.Join(act.Out, "summary.json")), &sum); err != nil {
		t.Fatal(err)
	}
	for k, v := range sum["leak"].(map[string]any) {
		at, layer, _ := strings.Cut(k, "/")
		if q := v.(map[string]any)["q95"].(float64); got[fmt.Sprintf("splitguard_leak_auc_q95{attack=%s,layer=%s}", at, layer)] != q {
			t.Errorf("leak q95 of %s: summary.json %v, metrics %v", k, q, got)
		}
	}
	if s := got["splitguard_step_seconds_last"]; !(s > 0 && s < 10) {
		t.Errorf("last step time %v s", s)
	}
	if ex := got["splitguard_exchanges_total"]; ex < float64(len(batches)) {
		t.Errorf("%v exchanges for %d training steps", ex, len(batches))
	}
	// The cut-layer embedding goes out and its gradient comes back: at
	// least batch × d float32s each way per step.
	perStep := float64(4 * base.Batch * base.Layers[base.Cut-1])
	for _, k := range []string{"splitguard_bytes_received_total", "splitguard_bytes_sent_total"} {
		if got[k] < perStep*float64(len(batches)-1) {
			t.Errorf("%s = %v, below %v bytes for %d steps", k, got[k], perStep*float64(len(batches)-1), len(batches))
		}
	}

	// Mid-run scrapes: each one step's values.
	checked := 0
	for _, s := range mid {
		steps := int(s["splitguard_step"])
		want, aucs := expectFromFiles(t, batches, evals, steps)
		for k, w := range want {
			if g, ok := s[k]; !ok || !sameFloat(g, w) {
				t.Errorf("scrape at step %d: %s = %v (present %v), want %v", steps, k, g, ok, w)
			}
		}
		if !slices.Contains(aucs, s["splitguard_test_auc"]) && steps > 0 {
			t.Errorf("scrape at step %d: test AUC %v, want one of %v", steps, s["splitguard_test_auc"], aucs)
		}
		if steps > 0 {
			checked++
		}
	}
	t.Logf("%d steps, %d evaluations; %d scrapes during training (%d after a step), final test AUC %.4f, %v bytes received",
		len(batches), len(evals), len(mid), checked, got["splitguard_test_auc"], got["splitguard_bytes_received_total"])
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestMetricsResumeClearsLastBatchGauges checks that a resume (after a
// rollback to a checkpoint) forgets the gauges of the last batch it may
// have undone, and takes the step counter and running quantiles from the
// restored series.
func TestMetricsResumeClearsLastBatchGauges(t *testing.T) {
	m := newActiveMetrics(Config{}, func() grpcnet.Stats { return grpcnet.Stats{} })
	gather := func() series { return gatherSeries(t, m) }
	v := 0.9
	m.batch(rundir.BatchRecord{Step: 41, Loss: 0.5, Leak: map[string]*float64{"norm/cut": &v}}, time.Millisecond)
	got := gather()
	if got["splitguard_step"] != 42 || got["splitguard_leak_auc{attack=norm,layer=cut}"] != 0.9 || got["splitguard_train_loss"] != 0.5 {
		t.Fatalf("after a batch: %v", got)
	}
	leak := metrics.NewLeak()
	leak.Add("norm", "cut", 0.6, 3, 5, true)
	leak.Add("norm", "cut", 0.7, 3, 5, true)
	m.resume(30, leak)
	got = gather()
	if got["splitguard_step"] != 30 {
		t.Errorf("step after resume = %v, want 30", got["splitguard_step"])
	}
	if v, ok := got["splitguard_leak_auc{attack=norm,layer=cut}"]; ok {
		t.Errorf("last-batch leak gauge still %v after the rollback", v)
	}
	if !math.IsNaN(got["splitguard_train_loss"]) {
		t.Errorf("last-batch loss %v after the rollback, want NaN", got["splitguard_train_loss"])
	}
	if q := got["splitguard_leak_auc_q95{attack=norm,layer=cut}"]; q != 0.7 {
		t.Errorf("running q95 after resume = %v, want 0.7 (the restored series 0.6, 0.7)", q)
	}
}

// TestMetricsIntegrityScores: an evaluation's detector scores become
// splitguard_integrity_score{detector}; each detector's gauge holds the
// last evaluation's score it had.
func TestMetricsIntegrityScores(t *testing.T) {
	m := newActiveMetrics(Config{}, func() grpcnet.Stats { return grpcnet.Stats{} })
	gather := func() series { return gatherSeries(t, m) }
	m.eval(rundir.EvalRecord{Step: 10, TestAUC: 0.7, Integrity: map[string]float64{"replay": 1, "collapse": 0.25}})
	m.eval(rundir.EvalRecord{Step: 20, TestAUC: 0.75, Integrity: map[string]float64{"collapse": 0.5}})
	got := gather()
	for k, want := range map[string]float64{"splitguard_integrity_score{detector=replay}": 1, "splitguard_integrity_score{detector=collapse}": 0.5, "splitguard_test_auc": 0.75} {
		if v, ok := got[k]; !ok || v != want {
			t.Errorf("%s = %v (present %v), want %v", k, v, ok, want)
		}
	}
}

// gatherSeries gathers m's registry directly, as a scrape would see it.
func gatherSeries(t *testing.T, m *activeMetrics) series {
	t.Helper()
	fams, err := m.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*dto.MetricFamily{}
	for _, f := range fams {
		byName[f.GetName()] = f
	}
	return flatten(byName)
}

// TestMetricsIntegrityAlarms: the default detector's alarm counter is
// served at 0 before any alarm, and each alarmed batch adds one to
// splitguard_integrity_alarms_total{detector}.
func TestMetricsIntegrityAlarms(t *testing.T) {
	m := newActiveMetrics(Config{}, func() grpcnet.Stats { return grpcnet.Stats{} })
	const key = "splitguard_integrity_alarms_total{detector=replay}"
	if v, ok := gatherSeries(t, m)[key]; !ok || v != 0 {
		t.Errorf("before any alarm: %v (served %t), want 0", v, ok)
	}
	for range 3 {
		m.alarm("replay")
	}
	if v := gatherSeries(t, m)[key]; v != 3 {
		t.Errorf("alarms counted %v, want 3", v)
	}
}
