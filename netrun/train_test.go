package netrun

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/splitguard/splitguard/config"
	"github.com/splitguard/splitguard/data"
	"github.com/splitguard/splitguard/pki"
	"github.com/splitguard/splitguard/protect"
	"github.com/splitguard/splitguard/run"
	"github.com/splitguard/splitguard/rundir"
)

// synthFile writes n synthetic Criteo rows (IDs are row numbers).
func synthFile(t testing.TB, n int) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "synth.txt")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := data.WriteSynth(f, int64(n), 0.25, 5); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

func smallConfig(dataPath, out string) config.Config {
	c := config.Default()
	c.Data, c.Out = dataPath, out
	c.Layers, c.Cut, c.EmbedDim = []int{16, 8, 8}, 2, 2
	c.Batch, c.Epochs, c.EvalEvery, c.LR, c.Seed = 64, 2, 7, 1e-3, 3
	c.TestFrac, c.HashBuckets = 0.2, 1000
	// The tests keep the last model and do not stop early, so that every
	// run has the same length; TestSelectionAndEarlyStopAsInProcess checks
	// selection and early stopping.
	c.Select, c.EarlyStop = config.SelectLast, 0
	c.Protect, c.Params = "marvell", protect.Params{"marvell_s": 2}
	c.Attacks = []string{"norm", "cosine", "majority_cosine", "hint3_distance", "spectral"}
	return c
}

func testLogger(t testing.TB) *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// pair runs both parties in this process over loopback and returns the
// active party's summary.
func pair(t *testing.T, act, pas Config) *rundir.Summary {
	t.Helper()
	return pairWith(t, act, pas, Options{})
}

// pairWith is pair with both parties' options opt (their loggers and the
// active's Ready are the test's).
func pairWith(t *testing.T, act, pas Config, opt Options) *rundir.Summary {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	var wait func() (*rundir.Summary, error)
	pas.Addr, wait = startActiveWith(t, ctx, act, opt)
	popt := opt
	popt.Logger = testLogger(t)
	if _, err := RunPassive(ctx, pas, popt); err != nil {
		t.Fatalf("passive: %v", err)
	}
	s, err := wait()
	if err != nil {
		t.Fatalf("active: %v", err)
	}
	return s
}

// startActive runs the active party of act on its own goroutine and
// returns the address it listens on (failing tb if it ends first) and
// what waits for its end.
func startActive(tb testing.TB, ctx context.Context, act Config) (string, func() (*rundir.Summary, error)) {
	tb.Helper()
	return startActiveWith(tb, ctx, act, Options{})
}

// startActiveWith is startActive with the active's options opt (its
// logger and Ready are the test's).
func startActiveWith(tb testing.TB, ctx context.Context, act Config, opt Options) (string, func() (*rundir.Summary, error)) {
	tb.Helper()
	addr := make(chan string, 1)
	type result struct {
		s   *rundir.Summary
		err error
	}
	done := make(chan result, 1)
	go func() {
		opt.Logger, opt.Ready = testLogger(tb), func(a string) { addr <- a }
		s, err := RunActive(ctx, act, opt)
		done <- result{s, err}
	}()
	wait := func() (*rundir.Summary, error) { r := <-done; return r.s, r.err }
	select {
	case a := <-addr:
		return a, wait
	case r := <-done:
		tb.Fatalf("active: %v", r.err)
		return "", nil
	}
}

func newTestPKI(t *testing.T) string {
	dir := t.TempDir()
	if err := pki.InitCA(dir, pki.CAOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"active", "passive", "mallory"} {
		if _, _, err := pki.Issue(dir, n, pki.IssueOptions{Hosts: []string{"127.0.0.1"}}); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func partyConfigs(base config.Config, root, certs string) (act, pas Config) {
	act, pas = Default(), Default()
	act.Config, pas.Config = base, base
	act.Out, pas.Out = filepath.Join(root, "active"), filepath.Join(root, "passive")
	act.Addr = "127.0.0.1:0"
	act.Name, act.PeerName, act.CertDir = "active", "passive", certs
	pas.Name, pas.PeerName, pas.CertDir = "passive", "active", certs
	act.PeerTimeout, pas.PeerTimeout = 20*time.Second, 20*time.Second
	act.CheckpointEvery, pas.CheckpointEvery = 5, 5
	return act, pas
}

func readLines[T any](t *testing.T, path string) []T {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []T
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var v T
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			t.Fatal(err)
		}
		out = append(out, v)
	}
	return out
}

// cutOnly keeps the leak keys of the cut layer (what the active sees).
func cutOnly[V any](m map[string]V) map[string]V {
	out := map[string]V{}
	for k, v := range m {
		if strings.HasSuffix(k, "/cut") {
			out[k] = v
		}
	}
	return out
}

// sameLeaks reports whether two runs' leak summaries agree bit for bit,
// a figure missing in both (NaN, written null) counting as equal: it
// compares their JSON, whose float text round-trips exactly.
func sameLeaks[V any](t *testing.T, a, b map[string]V) bool {
	t.Helper()
	ja, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	jb, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	return string(ja) == string(jb)
}

// TestNetworkedMatchesInProcess trains the same configuration in process
// and as two parties over mutual TLS on loopback (the passive loading the
// file without labels) and checks that every evaluation, every batch's
// loss, protection figures and cut-layer leak AUCs, and the summary agree
// bit for bit.
func TestNetworkedMatchesInProcess(t *testing.T) {
	path := synthFile(t, 900)
	root := t.TempDir()
	base := smallConfig(path, filepath.Join(root, "inproc"))
	want, err := run.Train(context.Background(), base, run.Options{})
	if err != nil {
		t.Fatal(err)
	}
	act, pas := partyConfigs(base, root, newTestPKI(t))
	got := pair(t, act, pas)

	if g, w := readLines[rundir.EvalRecord](t, filepath.Join(act.Out, "eval.jsonl")), readLines[rundir.EvalRecord](t, filepath.Join(base.Out, "eval.jsonl")); !reflect.DeepEqual(g, w) || len(w) < 3 {
		t.Fatalf("evaluations differ:\n got %v\nwant %v", g, w)
	}
	sameBatches(t, act.Out, base.Out, 1)
	if got.TestAUCFinal != want.TestAUCFinal || got.TestLossFinal != want.TestLossFinal || got.ACEFinal != want.ACEFinal ||
		got.TrainLossFinal != want.TrainLossFinal || got.Steps != want.Steps || got.TrainRows != want.TrainRows {
		t.Fatalf("summaries differ:\n got %+v\nwant %+v", got, want)
	}
	if !sameLeaks(t, got.Leak, cutOnly(want.Leak)) {
		t.Fatalf("leak summaries differ:\n got %v\nwant %v", got.Leak, cutOnly(want.Leak))
	}
	for _, f := range []string{filepath.Join(act.Out, "top.model"), filepath.Join(pas.Out, "bottom.model"), filepath.Join(act.Out, "summary.json")} {
		if _, err := os.Stat(f); err != nil {
			t.Error(err)
		}
	}
	t.Logf("test AUC %.6f in both modes; %d steps", got.TestAUCFinal, got.Steps)
}

// sameBatches checks that the networked run in dir got wrote the same
// batches.jsonl as the in-process run in dir want (at least minLines lines):
// step, loss, positives and protection statistics equal (solve times
// aside), and the cut layer's leak AUCs of the in-process run.
func sameBatches(t *testing.T, got, want string, minLines int) {
	t.Helper()
	gb := readLines[rundir.BatchRecord](t, filepath.Join(got, "batches.jsonl"))
	wb := readLines[rundir.BatchRecord](t, filepath.Join(want, "batches.jsonl"))
	if len(gb) != len(wb) || len(wb) < minLines {
		t.Fatalf("%d batches over the network, %d in process", len(gb), len(wb))
	}
	for i := range wb {
		g, w := gb[i], wb[i]
		for _, m := range []map[string]float64{g.Protection, w.Protection} {
			for k := range m {
				if k == "solve_ms" || strings.HasSuffix(k, "/solve_ms") { // a timing (per passive party's block with several)
					delete(m, k)
				}
			}
		}
		if g.Step != w.Step || g.Loss != w.Loss || g.Positives != w.Positives || !reflect.DeepEqual(g.Protection, w.Protection) ||
			!sameLeaks(t, g.Leak, cutOnly(w.Leak)) {
			t.Fatalf("batch %d differs:\n got %+v\nwant %+v", i, g, w)
		}
	}
}
