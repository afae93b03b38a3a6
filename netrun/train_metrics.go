package netrun

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"

	"github.com/splitguard/splitguard/metrics"
	"github.com/splitguard/splitguard/rundir"
	"github.com/splitguard/splitguard/transport/grpcnet"
)

// activeMetrics are the active party's Prometheus metrics, in a registry
// of their own (served on --metrics-addr at /metrics). A scrape sees the
// gauges of one step: the updates of a step and a scrape's gathering hold
// mu, so a scrape never mixes the step counter of one batch with the loss
// or leak AUCs of another.
type activeMetrics struct {
	mu         sync.Mutex
	reg        *prometheus.Registry
	step, loss prometheus.Gauge
	leak       *prometheus.GaugeVec
	// partyLeak is the last batch's leak AUC per passive party (or
	// colluding subset "A+B"), attack and layer, with several passive
	// parties; empty with one.
	partyLeak *prometheus.GaugeVec
	// integrity is each integrity detector's score at the last
	// evaluation (its largest since the evaluation before, the figure
	// key integrity_stop compares with).
	integrity *prometheus.GaugeVec
	// alarms counts each detector's batches at or above its alarm
	// threshold (key integrity_alarm; train_metrics_alarm.go).
	alarms            *prometheus.CounterVec
	testAUC, testLoss prometheus.Gauge
	stepSeconds       prometheus.Histogram
	lastStepSeconds   prometheus.Gauge

	// leakSeries holds, per (attack, layer), the defined per-batch leak
	// AUCs since step 0 (the auditor's series); the running 95% quantile
	// is taken of it when /metrics is read (leakQ95Collector), not at
	// every step.
	leakSeries map[leakLabels][]float64
}

// leakLabels are the label values of a leak metric.
type leakLabels struct{ attack, layer string }

func newActiveMetrics(cfg Config, stats func() grpcnet.Stats) *activeMetrics {
	m := &activeMetrics{reg: prometheus.NewRegistry()}
	g := func(name, help string) prometheus.Gauge {
		x := prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: help})
		m.reg.MustRegister(x)
		return x
	}
	m.step = g("splitguard_step", "Training steps done.")
	m.loss = g("splitguard_train_loss", "Mean BCE of the last training batch (active party only; never sent).")
	m.testAUC = g("splitguard_test_auc", "Test AUC of the last evaluation.")
	m.testLoss = g("splitguard_test_loss", "Test BCE of the last evaluation.")
	m.lastStepSeconds = g("splitguard_step_seconds_last", "Active-side time of the last training step (top model, protection, audit).")
	m.leak = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "splitguard_leak_auc",
		Help: "Leak AUC of the last training batch per attack and layer (what the active party sent)."}, []string{"attack", "layer"})
	m.partyLeak = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "splitguard_party_leak_auc",
		Help: "Leak AUC of the last training batch per passive party (or colluding subset A+B), attack and layer: what that party received, with several passive parties."}, []string{"party", "attack", "layer"})
	m.integrity = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "splitguard_integrity_score",
		Help: "Each integrity detector's score at the last evaluation: its largest since the evaluation before (eval.jsonl integrity; what integrity_stop compares with)."}, []string{"detector"})
	m.alarms = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "splitguard_integrity_alarms_total",
		Help: "Training batches whose integrity detector score reached its alarm threshold (key integrity_alarm; the run goes on)."}, []string{"detector"})
	m.reg.MustRegister(m.alarms)
	m.armAlarms(cfg.ResolvedAlarms())
	m.leakSeries = map[leakLabels][]float64{}
	q95 := &leakQ95Collector{m: m, desc: prometheus.NewDesc("splitguard_leak_auc_q95",
		"Running 95% quantile (nearest rank) of the per-batch leak AUC.", []string{"attack", "layer"}, nil)}
	m.stepSeconds = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "splitguard_step_seconds",
		Help: "Active-side time per training step.", Buckets: prometheus.ExponentialBuckets(1e-4, 2, 18)})
	info := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "splitguard_protection_info",
		Help: "The configured protection (value 1)."}, []string{"protect"})
	info.WithLabelValues(cfg.Protect).Set(1)
	m.reg.MustRegister(m.leak, m.partyLeak, m.integrity, q95, m.stepSeconds, info)
	counter := func(name, help string, f func(grpcnet.Stats) int64) {
		m.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help},
			func() float64 { return float64(f(stats())) }))
	}
	counter("splitguard_bytes_sent_total", "gRPC message bytes sent (incl. 5-byte frame headers).", func(s grpcnet.Stats) int64 { return s.BytesSent })
	counter("splitguard_bytes_received_total", "gRPC message bytes received.", func(s grpcnet.Stats) int64 { return s.BytesReceived })
	counter("splitguard_exchanges_total", "Forward/backward exchanges answered.", func(s grpcnet.Stats) int64 { return s.Exchanges })
	counter("splitguard_rejected_messages_total", "Messages refused by validation or ordering.", func(s grpcnet.Stats) int64 { return s.Rejected })
	counter("splitguard_retries_total", "Re-sent messages answered without re-applying them.", func(s grpcnet.Stats) int64 { return s.Retries })
	return m
}

// resume sets the step counter and the leak series to those of a
// (re)built party at step: leak holds the auditor's series up to step.
// The last-batch gauges (loss, per-attack leak AUC) described a batch that
// a rollback may have undone: the loss becomes NaN and the leak gauges are
// removed until the next batch sets them.
func (m *activeMetrics) resume(step int64, leak *metrics.Leak) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.step.Set(float64(step))
	m.loss.Set(math.NaN())
	m.leak.Reset()
	m.partyLeak.Reset()
	clear(m.leakSeries)
	for _, k := range leak.Keys() {
		at, layer, _ := metrics.SplitKey(k)
		if s := leak.Series(at, layer); len(s) > 0 {
			m.leakSeries[leakLabels{at, layer}] = slices.Clone(s)
		}
	}
}

// batch records a training batch: the step counter is b.Step+1 (steps
// done), the leak gauge of a batch whose AUC is undefined (one class) is
// NaN rather than the previous batch's value, and the defined AUCs join
// their series (as in the auditor, which skips undefined ones).
func (m *activeMetrics) batch(b rundir.BatchRecord, took time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.step.Set(float64(b.Step + 1))
	m.loss.Set(b.Loss)
	for k, v := range b.Leak {
		at, layer, _ := strings.Cut(k, "/")
		if v == nil || math.IsNaN(*v) {
			m.leak.WithLabelValues(at, layer).Set(math.NaN())
			continue
		}
		m.leak.WithLabelValues(at, layer).Set(*v)
		l := leakLabels{at, layer}
		m.leakSeries[l] = append(m.leakSeries[l], *v)
	}
	for party, leak := range b.Parties {
		for k, v := range leak {
			at, layer, _ := strings.Cut(k, "/")
			x := math.NaN()
			if v != nil {
				x = *v
			}
			m.partyLeak.WithLabelValues(party, at, layer).Set(x)
		}
	}
	m.stepSeconds.Observe(took.Seconds())
	m.lastStepSeconds.Set(took.Seconds())
}

// eval records an evaluation.
func (m *activeMetrics) eval(e rundir.EvalRecord) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.testAUC.Set(e.TestAUC)
	m.testLoss.Set(e.TestLoss)
	for d, v := range e.Integrity {
		m.integrity.WithLabelValues(d).Set(v)
	}
}

// leakQ95Collector exposes splitguard_leak_auc_q95: the nearest-rank 95%
// quantile of each leak series, computed when the registry is gathered.
// Gathering must hold m.mu (as serve's gatherer does).
type leakQ95Collector struct {
	m    *activeMetrics
	desc *prometheus.Desc
}

// Describe implements prometheus.Collector.
func (c *leakQ95Collector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

// Collect implements prometheus.Collector: one gauge per series with at
// least one defined AUC.
func (c *leakQ95Collector) Collect(ch chan<- prometheus.Metric) {
	for l, s := range c.m.leakSeries {
		q, err := metrics.Quantile(s, 0.95)
		if err != nil {
			ch <- prometheus.NewInvalidMetric(c.desc, err)
			continue
		}
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, q, l.attack, l.layer)
	}
}

// start serves /metrics on addr when it is not empty and logs the URL;
// the returned function stops the server (a no-op without one).
func (m *activeMetrics) start(addr string, log *slog.Logger) (func(), error) {
	if addr == "" {
		return func() {}, nil
	}
	stop, at, err := m.serve(addr)
	if err != nil {
		return nil, fmt.Errorf("active: metrics: %w", err)
	}
	log.Info("metrics", "url", "http://"+at+"/metrics")
	return stop, nil
}

// serve serves /metrics on addr; it returns a function that stops the
// server and the address actually listened on.
func (m *activeMetrics) serve(addr string) (func(), string, error) {
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, "", err
	}
	mux := http.NewServeMux()
	gather := prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) {
		m.mu.Lock()
		defer m.mu.Unlock()
		return m.reg.Gather()
	})
	mux.Handle("/metrics", promhttp.HandlerFor(gather, promhttp.HandlerOpts{}))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(lis); err != nil && !errors.Is(err, http.ErrServerClosed) {
			_ = err
		}
	}()
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	}, lis.Addr().String(), nil
}
