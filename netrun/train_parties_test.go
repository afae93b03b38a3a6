package netrun

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/splitguard/splitguard/config"
	"github.com/splitguard/splitguard/pki"
	"github.com/splitguard/splitguard/run"
	"github.com/splitguard/splitguard/rundir"
)

// threePartyBase is a small run with two passive parties on synthetic
// Criteo rows: party "inf" holds columns the generator tilts with the
// label, party "noise" others; the MLP's active party reads no column.
func threePartyBase(path, out string) config.Config {
	c := smallConfig(path, out)
	c.Model, c.Baseline = "mlp", false
	c.Attacks = []string{"norm", "cosine"}
	c.Parties = []config.Party{
		{Name: "inf", Columns: []string{"C1", "C2", "C5", "C8", "C11"}},
		{Name: "noise", Columns: []string{"C3", "C4", "C6", "C7", "C10"}},
	}
	return c
}

// threePartyConfigs returns the active party's configuration and each
// passive party's (named by its entry, with a certificate of its name
// from certs, "" for loopback without TLS).
func threePartyConfigs(base config.Config, root, certs string) (Config, []Config) {
	act := Default()
	act.Config, act.Out, act.Addr = base, filepath.Join(root, "active"), "127.0.0.1:0"
	act.CheckpointEvery, act.PeerTimeout = 0, 20*time.Second
	act.Name, act.CertDir, act.InsecureLoopback = "active", certs, certs == ""
	var pas []Config
	for _, p := range base.Parties {
		c := act
		c.Out, c.Name, c.PeerName = filepath.Join(root, p.Name), p.Name, "active"
		pas = append(pas, c)
	}
	return act, pas
}

// runThree runs the active party and every passive party in this process
// and returns the active's summary, each passive's error and the active's.
func runThree(t *testing.T, act Config, pas []Config) (*rundir.Summary, []error, error) {
	t.Helper()
	return runThreeHooked(t, act, pas, nil)
}

// runThreeClean is runThree for a run that must succeed: it fails t on
// any party's error and returns the active party's summary.
func runThreeClean(t *testing.T, act Config, pas []Config) *rundir.Summary {
	t.Helper()
	got, perrs, err := runThree(t, act, pas)
	for k, e := range perrs {
		if e != nil {
			t.Errorf("passive %s: %v", pas[k].Name, e)
		}
	}
	if err != nil {
		t.Fatalf("active: %v", err)
	}
	return got
}

// runThreeHooked is runThree with step, when not nil, called after every
// passive party's training step (Options.afterPassiveStep).
func runThreeHooked(t *testing.T, act Config, pas []Config, step func(int64) error) (*rundir.Summary, []error, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	addr, wait := startActive(t, ctx, act)
	errs := make([]error, len(pas))
	done := make(chan struct{}, len(pas))
	for k := range pas {
		p := pas[k]
		p.Addr = addr
		go func() {
			_, errs[k] = RunPassive(ctx, p, Options{Logger: testLogger(t), afterPassiveStep: step})
			done <- struct{}{}
		}()
	}
	for range pas {
		<-done
	}
	s, err := wait()
	return s, errs, err
}

// TestThreePartiesMatchInProcess trains two passive parties and the
// active party as three parties over mutual TLS on loopback (each passive
// with its own certificate, on the active's one address) and checks that
// every evaluation, every batch's loss, protection figures and cut-layer
// leak AUCs (the coalition's and every party's and pair's), and the
// summary equal the in-process run's with the same parties, under
// aggregation concat, sum and gated (the learned weights on the active's side).
func TestThreePartiesMatchInProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("trains three parties twice")
	}
	path := synthFile(t, 900)
	for _, agg := range []string{config.AggregationConcat, config.AggregationSum, config.AggregationGated} {
		t.Run(agg, func(t *testing.T) { threePartiesMatchInProcess(t, path, agg) })
	}
}

// threePartiesMatchInProcess is TestThreePartiesMatchInProcess under
// aggregation agg.
func threePartiesMatchInProcess(t *testing.T, path, agg string) {
	root := t.TempDir()
	base := threePartyBase(path, filepath.Join(root, "inproc"))
	base.Aggregation = agg
	want, err := run.Train(context.Background(), base, run.Options{})
	if err != nil {
		t.Fatal(err)
	}
	certs := newTestPKI(t)
	for _, n := range []string{"inf", "noise"} {
		if _, _, err := pki.Issue(certs, n, pki.IssueOptions{Hosts: []string{"127.0.0.1"}}); err != nil {
			t.Fatal(err)
		}
	}
	act, pas := threePartyConfigs(base, root, certs)
	got := runThreeClean(t, act, pas)
	sameAsThreeInProcess(t, act.Out, base.Out, got, want)
}

// sameAsThreeInProcess checks that the run the active party recorded in
// dir (summary got) equals the in-process three-party run in wantDir
// (summary want): every evaluation, every batch's loss and protection
// figures, every party's and pair's cut leak, and the summary.
func sameAsThreeInProcess(t *testing.T, dir, wantDir string, got, want *rundir.Summary) {
	t.Helper()
	if g, w := readLines[rundir.EvalRecord](t, filepath.Join(dir, "eval.jsonl")), readLines[rundir.EvalRecord](t, filepath.Join(wantDir, "eval.jsonl")); !reflect.DeepEqual(g, w) || len(w) < 3 {
		t.Fatalf("evaluations differ:\n got %v\nwant %v", g, w)
	}
	sameBatches(t, dir, wantDir, 1)
	gb := readLines[rundir.BatchRecord](t, filepath.Join(dir, "batches.jsonl"))
	wb := readLines[rundir.BatchRecord](t, filepath.Join(wantDir, "batches.jsonl"))
	for i := range wb {
		if len(wb[i].Parties) != 3 {
			t.Fatalf("batch %d: in process %d audited parties, want inf, noise and inf+noise", i, len(wb[i].Parties))
		}
		for name, w := range wb[i].Parties {
			if g := gb[i].Parties[name]; !reflect.DeepEqual(g, cutOnly(w)) {
				t.Fatalf("batch %d, party %s: leak\n got %v\nwant %v", i, name, fmtLeak(g), fmtLeak(cutOnly(w)))
			}
		}
	}
	if got.TestAUCFinal != want.TestAUCFinal || got.TestLossFinal != want.TestLossFinal || got.ACEFinal != want.ACEFinal ||
		got.TrainLossFinal != want.TrainLossFinal || got.Steps != want.Steps || got.TrainRows != want.TrainRows {
		t.Fatalf("summaries differ:\n got %+v\nwant %+v", got, want)
	}
	if !sameLeaks(t, got.Leak, cutOnly(want.Leak)) {
		t.Fatalf("leak summaries differ:\n got %v\nwant %v", got.Leak, cutOnly(want.Leak))
	}
	for name, w := range want.Parties {
		if g := got.Parties[name]; !sameLeaks(t, g.Leak, cutOnly(w.Leak)) || !reflect.DeepEqual(g.Members, w.Members) {
			t.Fatalf("party %s's summary differs:\n got %+v\nwant %+v", name, g, w)
		}
	}
	t.Logf("test AUC %.6f in both modes; %d steps; leak keys %d", got.TestAUCFinal, got.Steps, len(got.Leak))
}

func fmtLeak(m map[string]*float64) string {
	var parts []string
	for k, v := range m {
		if v != nil {
			parts = append(parts, fmt.Sprintf("%s=%g", k, *v))
		}
	}
	return strings.Join(parts, " ")
}

// TestPartiesConfigRefused: with several passive parties, a passive whose
// name is none of the entries', a column list of its own and scoring are
// refused, naming the key.
func TestPartiesConfigRefused(t *testing.T) {
	root := t.TempDir()
	act, pas := threePartyConfigs(threePartyBase(filepath.Join(root, "unused.txt"), root), root, "")
	for _, c := range []struct {
		name, role string
		cfg        Config
		set        func(*Config)
		want       []string
	}{
		{"unknown name", "passive", pas[0], func(c *Config) { c.Name = "mallory" }, []string{`name "mallory" (key name)`, "key parties: inf, noise"}},
		{"own columns", "passive", pas[1], func(c *Config) { c.Columns = []string{"C1"} }, []string{"key columns"}},
		{"scoring", "active serve", act, func(*Config) {}, []string{"active serve with several passive parties"}},
	} {
		cfg := c.cfg
		cfg.Parties = append([]config.Party(nil), cfg.Parties...)
		c.set(&cfg)
		err := cfg.validate(c.role)
		for _, w := range c.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %v, want a refusal naming %s", c.name, err, w)
			}
		}
	}
	for _, p := range pas { // and as given, both are accepted
		if err := p.validate("passive"); err != nil {
			t.Errorf("passive %s: %v", p.Name, err)
		}
	}
	if err := act.validate("active"); err != nil {
		t.Errorf("active: %v", err)
	}
}

// TestPartiesSplitMismatchRefused: a passive party whose parties list
// splits the columns otherwise than the active party's is refused at
// Hello, the refusal naming key parties; the digest of a one-passive run
// is unchanged by the parties' part (empty).
func TestPartiesSplitMismatchRefused(t *testing.T) {
	path := synthFile(t, 300)
	root := t.TempDir()
	act, pas := threePartyConfigs(threePartyBase(path, filepath.Join(root, "inproc")), root, "")
	act.PeerTimeout = 3 * time.Second
	other := pas[0]
	other.Parties = []config.Party{{Name: "inf", Columns: []string{"C1", "C2"}}, {Name: "noise", Columns: []string{"C3", "C4", "C6", "C7", "C10", "C5", "C8", "C11"}}}
	other.PeerTimeout = 3 * time.Second
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	addr, wait := startActive(t, ctx, act)
	other.Addr = addr
	_, err := RunPassive(ctx, other, Options{Logger: testLogger(t)})
	if err == nil || !strings.Contains(err.Error(), "key parties") {
		t.Errorf("passive with another split: %v, want a refusal naming key parties", err)
	}
	if keys := config.KeysOf(err); !slices.Equal(keys, []string{"parties", "aggregation"}) {
		t.Errorf("passive with another split: keys %v, want [parties aggregation] (the ones the refusal names)", keys)
	}
	cancel()
	if _, err := wait(); err == nil {
		t.Error("the active party ended without error with no passive aligned")
	}
	one := Default()
	one.Config = config.Default()
	if d := one.partiesDigest(); d != "" {
		t.Errorf("one passive party: parties digest %q, want empty", d)
	}
}

// TestPartiesPassiveDiesEndsRun: without checkpoints
// (TestPartiesPassiveKilledResumes has them), a passive party that dies
// at step 7 ends the run: the active party returns an error naming the
// dead party's connection instead of waiting forever, writes a truncated
// summary with the reason, and the other passive party ends too.
func TestPartiesPassiveDiesEndsRun(t *testing.T) {
	if testing.Short() {
		t.Skip("trains three parties")
	}
	path := synthFile(t, 900)
	root := t.TempDir()
	act, pas := threePartyConfigs(threePartyBase(path, filepath.Join(root, "inproc")), root, "")
	for _, c := range append([]*Config{&act}, &pas[0], &pas[1]) {
		c.PeerTimeout = 10 * time.Second // the alignment under -race takes seconds
	}
	var died atomic.Bool
	stepHook := func(step int64) error {
		if step == 7 && died.CompareAndSwap(false, true) { // the first passive at step 7
			return errKilled
		}
		return nil
	}
	start := time.Now()
	_, perrs, err := runThreeHooked(t, act, pas, stepHook)
	if err == nil {
		t.Fatal("the active party ended without error after a passive party died")
	}
	dead := 0
	for k, e := range perrs {
		if e == nil {
			t.Errorf("passive %s ended without error", pas[k].Name)
		}
		if errors.Is(e, errKilled) {
			dead++
		}
	}
	if dead != 1 {
		t.Errorf("%d passive parties died, want 1: %v", dead, perrs)
	}
	var s rundir.Summary
	b, rerr := os.ReadFile(filepath.Join(act.Out, rundir.SummaryFile))
	if rerr != nil {
		t.Fatal(rerr)
	}
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	if !s.Truncated || s.TruncatedReason == "" || s.Steps < 7 || s.Steps > 8 {
		t.Errorf("summary: truncated %v (%q) after %d steps, want truncated after step 7 or 8", s.Truncated, s.TruncatedReason, s.Steps)
	}
	t.Logf("active: %v (after %v)", err, time.Since(start).Round(time.Millisecond))
}
