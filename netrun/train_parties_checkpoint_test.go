package netrun

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/splitguard/splitguard/config"
	"github.com/splitguard/splitguard/pki"
	"github.com/splitguard/splitguard/run"
	"github.com/splitguard/splitguard/rundir"
)

// threeProcess is one start of the three parties of a K-party fault
// test: the active party and each passive (reaching it through its own
// proxy, so that the test can cut a passive's link as a SIGKILL does).
type threeProcess struct {
	sum   *rundir.Summary
	err   error
	perrs []error
}

// startThree runs the active party and both passives until each ends;
// passive k gets the hooks of hooks[k] (afterPassiveStep,
// afterPassiveSaved), either of which may be nil.
func startThree(t *testing.T, act Config, pas []Config, hooks [][2]func(*proxy, int64) error, logs *lockedLog) threeProcess {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	log := logs.logger()
	addr := make(chan string, 1)
	done := make(chan struct{})
	var res threeProcess
	go func() {
		res.sum, res.err = RunActive(ctx, act, Options{Logger: log, Ready: func(a string) { addr <- a }})
		close(done)
	}()
	var target string
	select {
	case target = <-addr:
	case <-done:
		t.Fatalf("active: %v", res.err)
	}
	res.perrs = make([]error, len(pas))
	var wg sync.WaitGroup
	for k := range pas {
		p := pas[k]
		px := newProxy(t, target)
		p.Addr = px.addr()
		opt := Options{Logger: log}
		if hooks != nil {
			if h := hooks[k][0]; h != nil {
				opt.afterPassiveStep = func(s int64) error { return h(px, s) }
			}
			if h := hooks[k][1]; h != nil {
				opt.afterPassiveSaved = func(s int64) error { return h(px, s) }
			}
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, res.perrs[k] = RunPassive(ctx, p, opt)
		}()
	}
	wg.Wait()
	<-done
	return res
}

// lockedLog collects every party's log lines (the parties log from
// several goroutines).
type lockedLog struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedLog) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(lockedWriter{&l.mu, &l.b}, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

func (l *lockedLog) String() string { l.mu.Lock(); defer l.mu.Unlock(); return l.b.String() }

// killAt returns a hook that, at step, cuts the passive's link (no word
// reaches the active, as after a SIGKILL) and ends the passive.
func killAt(step int64) func(*proxy, int64) error {
	return func(px *proxy, s int64) error {
		if s != step {
			return nil
		}
		px.cut()
		return errKilled
	}
}

// TestPartiesPassiveKilledResumes: in a three-party run over mutual TLS
// with checkpoints every 5 steps, one passive party is killed (its link
// cut, its process ended with no word to the active): "inf" right after
// it saved its checkpoint of step 10, "noise" after its training step 10
// before it asked for that checkpoint (the other passive may have saved
// 10, so the parties must agree on 5). The active and the other passive
// end with an error, each keeping its checkpoints; restarted, the three
// resume at the newest checkpoint every party holds and finish with
// every evaluation, every batch's loss and leak, every party's and the
// pair's leak and the summary equal to the uninterrupted in-process run
// (run.Train), which TestThreePartiesMatchInProcess shows equal to the
// uninterrupted two-process run; an uninterrupted two-process run with
// the same checkpoints is compared too, and the kill after a checkpoint
// is repeated under aggregation gated (the gate is in the active's
// checkpoint).
func TestPartiesPassiveKilledResumes(t *testing.T) {
	if testing.Short() {
		t.Skip("trains three parties several times")
	}
	path := synthFile(t, 900)
	root := t.TempDir()
	// The in-process reference of each aggregation.
	bases, wants := map[string]config.Config{}, map[string]*rundir.Summary{}
	for _, agg := range []string{config.AggregationConcat, config.AggregationGated} {
		b := threePartyBase(path, filepath.Join(root, "inproc-"+agg))
		b.Aggregation = agg
		w, err := run.Train(context.Background(), b, run.Options{})
		if err != nil {
			t.Fatal(err)
		}
		bases[agg], wants[agg] = b, w
	}
	certs := newTestPKI(t)
	for _, n := range []string{"inf", "noise"} {
		if _, _, err := pki.Issue(certs, n, pki.IssueOptions{Hosts: []string{"127.0.0.1"}}); err != nil {
			t.Fatal(err)
		}
	}
	configs := func(base config.Config, dir string) (Config, []Config) {
		act, pas := threePartyConfigs(base, filepath.Join(root, dir), certs)
		for _, c := range append([]*Config{&act}, &pas[0], &pas[1]) {
			c.CheckpointEvery, c.PeerTimeout = 5, 15*time.Second // how long the kill takes to notice
		}
		return act, pas
	}
	tests := []struct {
		name, agg string
		hooks     [][2]func(*proxy, int64) error
		resume    string
	}{
		{"uninterrupted", config.AggregationConcat, nil, ""},
		{"inf killed after saving 10", config.AggregationConcat, [][2]func(*proxy, int64) error{{nil, killAt(10)}, {}}, "step=10"},
		{"noise killed before saving 10", config.AggregationConcat, [][2]func(*proxy, int64) error{{}, {killAt(10), nil}}, "step=5"},
		{"gated noise killed after saving 10", config.AggregationGated, [][2]func(*proxy, int64) error{{}, {nil, killAt(10)}}, "step=10"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			base, want := bases[tc.agg], wants[tc.agg]
			act, pas := configs(base, strings.ReplaceAll(tc.name, " ", "-"))
			var logs lockedLog
			first := startThree(t, act, pas, tc.hooks, &logs)
			if tc.hooks == nil {
				for k, e := range append(first.perrs, first.err) {
					if e != nil {
						t.Fatalf("party %d: %v\n%s", k, e, logs.String())
					}
				}
				sameAsThreeInProcess(t, act.Out, base.Out, first.sum, want)
				return
			}
			if first.err == nil {
				t.Fatal("the active party ended without error after a passive party was killed")
			}
			for k, e := range first.perrs {
				if e == nil {
					t.Fatalf("passive %s ended without error", pas[k].Name)
				}
			}
			if s := readSummary(t, act.Out); !s.Truncated {
				t.Fatalf("the interrupted run's summary is not truncated: %+v", s)
			}
			var again lockedLog
			// No one is killed now: time enough for the ID alignment
			// under -race on a loaded machine.
			for _, c := range append([]*Config{&act}, &pas[0], &pas[1]) {
				c.PeerTimeout = time.Minute
			}
			second := startThree(t, act, pas, nil, &again)
			for k, e := range append(second.perrs, second.err) {
				if e != nil {
					t.Fatalf("restarted party %d: %v\n%s", k, e, again.String())
				}
			}
			resumed := 0
			for _, l := range strings.Split(again.String(), "\n") {
				if strings.Contains(l, "msg=resuming") {
					if !strings.Contains(l, tc.resume) {
						t.Fatalf("resumed with %q, want %s", l, tc.resume)
					}
					resumed++
				}
			}
			if resumed != 3 {
				t.Fatalf("%d parties logged their resume, want 3:\n%s", resumed, again.String())
			}
			sameAsThreeInProcess(t, act.Out, base.Out, second.sum, want)
			if s := readSummary(t, act.Out); s.Truncated {
				t.Fatalf("the resumed run's summary is truncated: %q", s.TruncatedReason)
			}
			if tc.agg == config.AggregationConcat {
				sameBottoms(t, pas, filepath.Join(root, "uninterrupted"))
			}
		})
	}
}

// sameBottoms checks that each passive's saved bottom model (its own
// record of the run, what model completion reads) equals, byte for byte,
// the one of the same party in the uninterrupted run under dir.
func sameBottoms(t *testing.T, pas []Config, dir string) {
	t.Helper()
	for _, p := range pas {
		g, err := os.ReadFile(filepath.Join(p.Out, rundir.BottomModelFile))
		if err != nil {
			t.Fatal(err)
		}
		w, err := os.ReadFile(filepath.Join(dir, p.Name, rundir.BottomModelFile))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(g, w) {
			t.Errorf("passive %s: the resumed run's bottom model differs from the uninterrupted run's", p.Name)
		}
	}
}

// TestCommonStep checks the resume step against hand-picked holdings.
func TestCommonStep(t *testing.T) {
	tests := []struct {
		active   []int64
		passives [][]int64
		want     int64
	}{
		{nil, [][]int64{{0}, {0}}, 0},
		{[]int64{5, 10}, [][]int64{{5, 10, 10, 0}, {5, 10, 10, 0}}, 10},
		{[]int64{5, 10}, [][]int64{{5, 10, 10, 0}, {5, 5, 0}}, 5},
		{[]int64{5, 10}, [][]int64{{10, 10, 0}, {5, 5, 0}}, 0},
		{[]int64{5}, [][]int64{{5, 10, 10, 0}, {5, 10, 10, 0}}, 5},
		{[]int64{10, 15}, [][]int64{{10, 15, 15, 0}, {10, 15, 15, 0}, {5, 10, 10, 0}}, 10},
	}
	for _, tc := range tests {
		if got := commonStep(tc.active, tc.passives); got != tc.want {
			t.Errorf("commonStep(%v, %v) = %d, want %d", tc.active, tc.passives, got, tc.want)
		}
	}
}

// TestPartiesResumeRefusesOtherStep: once the parties agreed on the step
// to resume from, a passive party proposing another is refused with an
// error naming its step and the run's; and a resume whose common step is
// behind the checkpoint every party acknowledged (a party lost it) is
// refused, naming both steps.
func TestPartiesResumeRefusesOtherStep(t *testing.T) {
	r := &partiesRun{names: []string{"inf", "noise"}, ready: make(chan struct{})}
	close(r.ready)
	r.ck.settled = make(chan struct{})
	r.ck.at = 10
	close(r.ck.settled)
	r.cfg.PeerTimeout = time.Second
	err := r.resumeProposal(context.Background(), 1, 5, []int64{0, 5})
	if err == nil || !strings.Contains(err.Error(), "passive party noise proposes to resume at step 5: the run resumes at step 10") {
		t.Fatalf("a proposal of another step: %v", err)
	}
	if err := r.resumeProposal(context.Background(), 0, 10, nil); err != nil {
		t.Fatalf("the agreed step: %v", err)
	}
	behind := &partiesRun{names: []string{"inf", "noise"}, log: slog.New(slog.DiscardHandler)}
	behind.cfg.CheckpointEvery = 5
	behind.ck.store = store{dir: t.TempDir(), role: "active"}
	behind.ck.acked = 10
	behind.ck.props = [][]int64{{5, 10, 10, 0}, {5, 5, 0}}
	if _, err := behind.settle(); err == nil || !strings.Contains(err.Error(), "step 0, behind step 10 that every party acknowledged") {
		t.Fatalf("a resume behind the acknowledged step: %v", err)
	}
}
