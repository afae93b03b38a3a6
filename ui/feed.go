// Package ui is the live page of `splitguard train --ui ADDR`: a local
// HTTP server whose page draws training loss, test AUC and the leak AUC of
// every audited attack/layer while training runs. The training loop hands
// each batch and evaluation to a [Feed]; the page receives updates by
// server-sent events (falling back to polling /api/state). Everything the
// page needs is inline: no CDN, no external file.
package ui

import (
	"encoding/json"
	"maps"
	"math"
	"sort"
	"sync"
	"time"
)

// Batch is what the page shows of one training batch (a line of
// batches.jsonl).
type Batch struct {
	Step int64
	Loss float64
	// Leak maps "ATTACK/LAYER" to the batch's leak AUC; nil where undefined.
	Leak map[string]*float64
	// Parties, in a run with several passive parties, maps each party
	// and colluding subset to its own Leak; the page shows each as
	// "PARTY · ATTACK/LAYER".
	Parties map[string]map[string]*float64
}

// Eval is one evaluation on the test split (a line of eval.jsonl).
type Eval struct {
	Step     int64
	TestAUC  float64
	TestLoss float64
	ACE      float64
	// PartyGain, with several passive parties and the contribution on,
	// is each party's leave-one-party-out gain in validation AUC (nil
	// where undefined).
	PartyGain map[string]*float64
	// Features are the feature attacks' figures (EvalRecord.Features:
	// "ATTACK/r2_mean" and the like).
	Features map[string]float64
	// Integrity is each integrity detector's largest score over the
	// training batches since the previous evaluation
	// (EvalRecord.Integrity).
	Integrity map[string]float64
}

// PartyKey is the page's name of a party's series of key.
func PartyKey(party, key string) string { return party + " · " + key }

// Info describes the run being shown.
type Info struct {
	// Title is shown at the top, e.g. the run directory.
	Title string `json:"title"`
	// Protect is the protection setting, e.g. "marvell s=4".
	Protect string `json:"protect"`
	// Method is the protection method name, used for the page's colour.
	Method string `json:"method"`
	// TotalSteps is the number of training steps, 0 if unknown.
	TotalSteps int64 `json:"total_steps"`
	// IntegrityStop is the score at which each integrity detector ends
	// the run (a detector without one never does); the page draws it.
	IntegrityStop map[string]float64 `json:"integrity_stop,omitempty"`
	// IntegrityAlarm is the score at which each integrity detector warns
	// without ending the run (0 or absent: never); the page draws it too.
	IntegrityAlarm map[string]float64 `json:"integrity_alarm,omitempty"`
}

// MaxPoints bounds the points the feed keeps per series: older points are
// merged pairwise (averaged) as training goes on, so memory and the page's
// work stay bounded for any number of batches.
const MaxPoints = 600

// series is a decimated (step, value) series: values are averaged over
// buckets of stride consecutive inputs; when the series reaches MaxPoints
// adjacent points are merged and the stride doubles.
type series struct {
	X, Y   []float64
	stride int
	// the open bucket
	bx, by float64
	bn, in int
}

func newSeries() *series { return &series{stride: 1} }

// add feeds one input; ok false (an undefined value) still counts toward
// the bucket so that all series of a run share bucket boundaries.
func (s *series) add(x, y float64, ok bool) {
	if ok && !math.IsNaN(y) && !math.IsInf(y, 0) {
		s.bx += x
		s.by += y
		s.bn++
	}
	s.in++
	if s.in < s.stride {
		return
	}
	s.flush()
}

func (s *series) flush() {
	if s.bn > 0 {
		s.X = append(s.X, s.bx/float64(s.bn))
		s.Y = append(s.Y, s.by/float64(s.bn))
	}
	s.bx, s.by, s.bn, s.in = 0, 0, 0, 0
	if len(s.X) >= MaxPoints {
		n := len(s.X) / 2
		for i := range n {
			s.X[i] = (s.X[2*i] + s.X[2*i+1]) / 2
			s.Y[i] = (s.Y[2*i] + s.Y[2*i+1]) / 2
		}
		if len(s.X)%2 == 1 { // keep the odd last point
			s.X[n], s.Y[n] = s.X[len(s.X)-1], s.Y[len(s.Y)-1]
			n++
		}
		s.X, s.Y = s.X[:n], s.Y[:n]
		s.stride *= 2
	}
}

// points returns the series with the open bucket as a provisional last
// point, as [[x, y], …].
func (s *series) points() [][2]float64 {
	out := make([][2]float64, len(s.X), len(s.X)+1)
	for i := range s.X {
		out[i] = [2]float64{s.X[i], s.Y[i]}
	}
	if s.bn > 0 {
		out = append(out, [2]float64{s.bx / float64(s.bn), s.by / float64(s.bn)})
	}
	return out
}

// Feed collects a run's progress for the page. Its methods are safe for
// concurrent use; Batch and Eval are cheap (no allocation per call beyond
// the decimated series' growth) so the training loop may call them every
// batch.
type Feed struct {
	mu      sync.Mutex
	info    Info
	start   time.Time
	step    int64
	loss    *series
	leak    map[string]*series
	last    map[string]*float64
	evalAUC [][2]float64
	evalLos [][2]float64
	evalX   map[string][][2]float64 // per-evaluation figures beside the AUC
	integ   map[string][][2]float64 // the detectors' scores at each evaluation
	lastEv  *Eval
	done    bool
	errText string
	version uint64
	changed chan struct{} // closed and replaced on every change
}

// NewFeed returns an empty feed for the run info describes.
func NewFeed(info Info) *Feed {
	return &Feed{info: info, start: time.Now(), loss: newSeries(), leak: map[string]*series{},
		evalX: map[string][][2]float64{}, changed: make(chan struct{})}
}

func (f *Feed) notify() {
	f.version++
	close(f.changed)
	f.changed = make(chan struct{})
}

// SetTotal sets the number of training steps once it is known.
func (f *Feed) SetTotal(steps int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.info.TotalSteps = steps
	f.notify()
}

// Batch records one training batch.
func (f *Feed) Batch(b Batch) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.step = b.Step
	x := float64(b.Step)
	f.loss.add(x, b.Loss, true)
	last := b.Leak
	if len(b.Parties) > 0 {
		last = maps.Clone(b.Leak)
		if last == nil {
			last = map[string]*float64{}
		}
		for party, leak := range b.Parties {
			for k, v := range leak {
				last[PartyKey(party, k)] = v
			}
		}
	}
	for k, v := range last {
		s := f.leak[k]
		if s == nil {
			s = newSeries()
			// a key first seen late starts with the others' stride
			s.stride = f.loss.stride
			f.leak[k] = s
		}
		if v != nil {
			s.add(x, *v, true)
		} else {
			s.add(x, 0, false)
		}
	}
	f.last = last
	f.notify()
}

// Eval records one evaluation. Evaluations are few (one per eval period)
// and kept in full.
func (f *Feed) Eval(e Eval) {
	f.mu.Lock()
	defer f.mu.Unlock()
	x := float64(e.Step)
	if !math.IsNaN(e.TestAUC) {
		f.evalAUC = append(f.evalAUC, [2]float64{x, e.TestAUC})
	}
	if !math.IsNaN(e.TestLoss) {
		f.evalLos = append(f.evalLos, [2]float64{x, e.TestLoss})
	}
	for party, g := range e.PartyGain {
		if g != nil && !math.IsNaN(*g) {
			k := "contribution · " + party
			f.evalX[k] = append(f.evalX[k], [2]float64{x, *g})
		}
	}
	for name, v := range e.Features {
		if !math.IsNaN(v) && !math.IsInf(v, 0) {
			k := "features · " + name
			f.evalX[k] = append(f.evalX[k], [2]float64{x, v})
		}
	}
	f.addIntegrity(x, e.Integrity)
	ev := e
	ev.PartyGain, ev.Features, ev.Integrity = nil, nil, nil // in eval_extra and integrity
	f.lastEv = &ev
	f.notify()
}

// Done marks the run finished; err non-nil marks it failed.
func (f *Feed) Done(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.done = true
	if err != nil {
		f.errText = err.Error()
	}
	f.notify()
}

// State is the JSON document of /api/state and of each server-sent event.
type State struct {
	Version  uint64                  `json:"version"`
	Info     Info                    `json:"info"`
	Step     int64                   `json:"step"`
	Elapsed  float64                 `json:"elapsed_s"`
	Done     bool                    `json:"done"`
	Error    string                  `json:"error,omitempty"`
	Loss     [][2]float64            `json:"loss"`
	Leak     map[string][][2]float64 `json:"leak"`
	Keys     []string                `json:"keys"`
	LastLeak map[string]*float64     `json:"last_leak"`
	EvalAUC  [][2]float64            `json:"eval_auc"`
	EvalLoss [][2]float64            `json:"eval_loss"`
	LastEval *Eval                   `json:"last_eval,omitempty"`
	// EvalExtra are the per-evaluation figures beside the test AUC: each
	// passive party's contribution ("contribution · PARTY") and the
	// feature attacks' figures ("features · ATTACK/…"), in ExtraKeys'
	// order.
	EvalExtra map[string][][2]float64 `json:"eval_extra"`
	ExtraKeys []string                `json:"extra_keys"`
	// Integrity is each integrity detector's largest score since the
	// evaluation before, at every evaluation, in IntegrityKeys' order;
	// absent without detectors.
	Integrity     map[string][][2]float64 `json:"integrity,omitempty"`
	IntegrityKeys []string                `json:"integrity_keys,omitempty"`
}

// Snapshot returns the feed's current state.
func (f *Feed) Snapshot() State {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.snapshotLocked()
}

func (f *Feed) snapshotLocked() State {
	st := State{Version: f.version, Info: f.info, Step: f.step, Elapsed: time.Since(f.start).Seconds(),
		Done: f.done, Error: f.errText, Loss: f.loss.points(), Leak: map[string][][2]float64{},
		LastLeak: map[string]*float64{}, EvalAUC: append([][2]float64{}, f.evalAUC...),
		EvalLoss: append([][2]float64{}, f.evalLos...), LastEval: f.lastEv}
	for k, s := range f.leak {
		st.Leak[k] = s.points()
		st.Keys = append(st.Keys, k)
	}
	for k, v := range f.last {
		if v != nil && !math.IsNaN(*v) {
			x := *v
			st.LastLeak[k] = &x
		} else {
			st.LastLeak[k] = nil
		}
	}
	sort.Strings(st.Keys)
	st.EvalExtra = make(map[string][][2]float64, len(f.evalX))
	for k, pts := range f.evalX {
		st.EvalExtra[k] = append([][2]float64{}, pts...)
		st.ExtraKeys = append(st.ExtraKeys, k)
	}
	sort.Strings(st.ExtraKeys)
	f.snapshotIntegrity(&st)
	return st
}

// wait returns the state once its version exceeds after (or at once if it
// already does), and a channel closed at the next change.
func (f *Feed) wait(after uint64) (State, <-chan struct{}, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.version > after {
		return f.snapshotLocked(), nil, true
	}
	return State{}, f.changed, false
}

// MarshalJSON encodes the feed's snapshot.
func (f *Feed) MarshalJSON() ([]byte, error) { return json.Marshal(f.Snapshot()) }
