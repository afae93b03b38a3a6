package netrun

import (
	"bytes"
	"context"
	"errors"
	"github.com/splitguard/splitguard/atomicfile/atomicfiletest"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/splitguard/splitguard/config"
	"github.com/splitguard/splitguard/psi"
	"github.com/splitguard/splitguard/run"
	"github.com/splitguard/splitguard/rundir"
	"github.com/splitguard/splitguard/tensor"
	"github.com/splitguard/splitguard/transport"
	"github.com/splitguard/splitguard/transport/grpcnet"
)

// proxy relays TCP connections to target on loopback, so that a test can
// cut the link (a killed or unplugged peer) or stall it (a slow peer).
type proxy struct {
	t      *testing.T
	lis    net.Listener
	target string

	mu    sync.Mutex
	down  bool
	stall bool
	conns []net.Conn
}

func newProxy(t *testing.T, target string) *proxy {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{t: t, lis: lis, target: target}
	t.Cleanup(func() { lis.Close(); p.cut() })
	go p.accept()
	return p
}

func (p *proxy) addr() string { return p.lis.Addr().String() }

func (p *proxy) accept() {
	for {
		c, err := p.lis.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		if p.down {
			p.mu.Unlock()
			c.Close()
			continue
		}
		s, err := net.Dial("tcp", p.target)
		if err != nil {
			p.mu.Unlock()
			c.Close()
			continue
		}
		p.conns = append(p.conns, c, s)
		p.mu.Unlock()
		go p.pipe(c, s)
		go p.pipe(s, c)
	}
}

// pipe copies src to dst, holding bytes back while the link is stalled.
func (p *proxy) pipe(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		for {
			p.mu.Lock()
			stalled := p.stall && !p.down
			p.mu.Unlock()
			if !stalled {
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				src.Close()
				return
			}
		}
		if err != nil {
			dst.Close()
			return
		}
	}
}

// cut closes every relayed connection and refuses new ones until up.
func (p *proxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = true
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

func (p *proxy) up() { p.mu.Lock(); p.down = false; p.mu.Unlock() }

func (p *proxy) setStall(on bool) { p.mu.Lock(); p.stall = on; p.mu.Unlock() }

// faultRun is one two-party run of the fault tests: the active party in
// the background, the passive reaching it through a proxy.
type faultRun struct {
	t        *testing.T
	act, pas Config
	px       *proxy
	done     chan activeResult
	// cancel ends the active party's context (as a signal would).
	cancel context.CancelFunc
	log    *strings.Builder
	logMu  *sync.Mutex
	// saved and stepped are the passive's test hooks (Options'
	// afterPassiveSaved and afterPassiveStep) for its next run.
	saved, stepped func(step int64) error
	// inProcessSecret is the active's option of that name, which the
	// passive shares.
	inProcessSecret bool
}

type activeResult struct {
	s   *rundir.Summary
	err error
}

// lockedWriter collects log lines from several goroutines.
type lockedWriter struct {
	mu *sync.Mutex
	b  *strings.Builder
}

func (w lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (r *faultRun) logText() string {
	r.logMu.Lock()
	defer r.logMu.Unlock()
	return r.log.String()
}

// faultRows is the size of the fault tests' data set: 800 training rows,
// 13 steps per epoch, 26 in all.
const faultRows = 1000

// faultBase is the configuration of the fault tests and its in-process
// reference run (directory ref).
func faultBase(t *testing.T, root string) (base config.Config, ref string) {
	t.Helper()
	base = smallConfig(synthFile(t, faultRows), filepath.Join(root, "inproc"))
	base.Attacks = []string{"norm", "cosine"}
	if _, err := run.Train(context.Background(), base, run.Options{}); err != nil {
		t.Fatal(err)
	}
	return base, base.Out
}

func startFault(t *testing.T, base config.Config, root string) *faultRun {
	t.Helper()
	return startFaultWith(t, base, root, Options{})
}

// startFaultWith is startFault with the active party's options aopt (its
// logger and Ready are the test's).
func startFaultWith(t *testing.T, base config.Config, root string, aopt Options) *faultRun {
	t.Helper()
	act, pas := partyConfigs(base, root, newTestPKI(t))
	// Generous: the race detector makes PSI and training slow.
	act.PeerTimeout, pas.PeerTimeout = 90*time.Second, 90*time.Second
	r := &faultRun{t: t, act: act, pas: pas, done: make(chan activeResult, 1), log: &strings.Builder{}, logMu: &sync.Mutex{}, inProcessSecret: aopt.inProcessSecret}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Second)
	t.Cleanup(cancel)
	r.cancel = cancel
	addr := make(chan string, 1)
	go func() {
		aopt.Logger, aopt.Ready = r.logger(), func(a string) { addr <- a }
		s, err := RunActive(ctx, act, aopt)
		r.done <- activeResult{s, err}
	}()
	select {
	case a := <-addr:
		r.px = newProxy(t, a)
		r.pas.Addr = r.px.addr()
	case res := <-r.done:
		t.Fatalf("active: %v", res.err)
	}
	return r
}

func (r *faultRun) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(lockedWriter{r.logMu, r.log}, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

// passive runs the passive party to its end.
func (r *faultRun) passive(ctx context.Context) (*PassiveResult, error) {
	return RunPassive(ctx, r.pas, r.passiveOptions())
}

// passiveOptions are the passive's options: the test's logger and hooks,
// and the active's choice of secret.
func (r *faultRun) passiveOptions() Options {
	return Options{Logger: r.logger(), afterPassiveSaved: r.saved, afterPassiveStep: r.stepped, inProcessSecret: r.inProcessSecret}
}

func (r *faultRun) activeEnd() activeResult {
	select {
	case res := <-r.done:
		return res
	case <-time.After(60 * time.Second):
		r.t.Fatal("the active party did not end")
	}
	return activeResult{}
}

// sameAsReference checks that the run's records equal the in-process
// reference run's.
func (r *faultRun) sameAsReference(ref string) {
	t := r.t
	t.Helper()
	g, w := readLines[rundir.EvalRecord](t, filepath.Join(r.act.Out, "eval.jsonl")), readLines[rundir.EvalRecord](t, filepath.Join(ref, "eval.jsonl"))
	if len(g) != len(w) || len(w) == 0 {
		t.Fatalf("%d evaluations, the reference %d", len(g), len(w))
	}
	for i := range w {
		if !reflect.DeepEqual(g[i], w[i]) {
			t.Fatalf("evaluation %d: %+v, the reference %+v", i, g[i], w[i])
		}
	}
	sameBatches(t, r.act.Out, ref, 1)
}

// kill makes the passive's checkpoint of step its last act: the link is
// cut (nothing more reaches the active, as when the process is killed) and
// the passive's run ends.
var errKilled = errors.New("killed by the test")

func killPassiveAfter(r *faultRun, step int64) {
	r.saved = func(s int64) error {
		if s != step {
			return nil
		}
		r.px.cut()
		return errKilled
	}
}

// killRestartAndEnd kills the passive right after its checkpoint of
// step, restarts it with the link up again, and waits for the active's
// end; each party must end without error.
func killRestartAndEnd(t *testing.T, r *faultRun, step int64) {
	t.Helper()
	killPassiveAfter(r, step)
	if _, err := r.passive(context.Background()); !errors.Is(err, errKilled) {
		t.Fatalf("the killed passive: %v", err)
	}
	r.saved = nil
	r.px.up()
	if _, err := r.passive(context.Background()); err != nil {
		t.Fatalf("the restarted passive: %v\n%s", err, r.logText())
	}
	if res := r.activeEnd(); res.err != nil {
		t.Fatalf("active: %v", res.err)
	}
}

// TestPassiveKilledResumes kills the passive party right after it saved
// its checkpoint of step 10 (the active's acknowledged step is 5), then
// restarts it: with its checkpoints intact, the run resumes at 10; with
// its newest checkpoint corrupt, it says so and falls back to 5 (the code
// before this test aborted the run); with a temporary file an interrupted
// write left, the file is removed. Each run ends identical to the
// uninterrupted in-process run.
func TestPassiveKilledResumes(t *testing.T) {
	if testing.Short() {
		t.Skip("three two-party runs")
	}
	root := t.TempDir()
	base, ref := faultBase(t, root)
	tests := []struct {
		name       string
		damage     func(t *testing.T, dir string)
		wantResume string
		wantLog    string
	}{
		{"intact", func(*testing.T, string) {}, "step=10", ""},
		{"newest checkpoint corrupt", func(t *testing.T, dir string) {
			corruptFile(t, filepath.Join(dir, "passive-000000000010.ckpt"))
		}, "step=5", "skipping a checkpoint that does not verify"},
		{"orphaned temporary", func(t *testing.T, dir string) {
			if err := os.WriteFile(filepath.Join(dir, ".tmp-passive-000000000015.ckpt-123"), []byte("half"), 0o600); err != nil {
				t.Fatal(err)
			}
		}, "step=10", "removed a temporary file"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := startFault(t, base, filepath.Join(root, strings.ReplaceAll(tc.name, " ", "-")))
			killPassiveAfter(r, 10)
			if _, err := r.passive(context.Background()); !errors.Is(err, errKilled) {
				t.Fatalf("the killed passive: %v", err)
			}
			r.saved = nil
			tc.damage(t, r.pas.checkpointDir())
			r.px.up()
			if _, err := r.passive(context.Background()); err != nil {
				t.Fatalf("the restarted passive: %v\n%s", err, r.logText())
			}
			if res := r.activeEnd(); res.err != nil {
				t.Fatalf("active: %v", res.err)
			}
			log := r.logText()
			var resumed string
			for _, l := range strings.Split(log, "\n") {
				if strings.Contains(l, "party=passive") && strings.Contains(l, "msg=resuming") {
					resumed = l
				}
			}
			if !strings.Contains(resumed, tc.wantResume) || !strings.Contains(log, tc.wantLog) {
				t.Fatalf("resumed with %q, want %s and a log line %q", resumed, tc.wantResume, tc.wantLog)
			}
			r.sameAsReference(ref)
		})
	}
}

// hookAt runs f when the passive has saved its checkpoint of step.
func hookAt(r *faultRun, step int64, f func() error) {
	r.saved = func(s int64) error {
		if s != step {
			return nil
		}
		return f()
	}
}

// intruder is a second client holding the passive party's certificate,
// connecting to the active party directly.
func (r *faultRun) intruder(t *testing.T) *grpcnet.Client {
	t.Helper()
	cfg := r.pas
	cfg.Addr = r.px.target
	c, err := dial(&cfg, Options{Logger: r.logger()}, "intruder", 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestIntruderCannotRewriteTheRun: while the passive party's session is
// live, a second client with the passive's certificate tries to roll the
// run back (Checkpoint 0: on the code before sessions this erased the
// batch records), to abort it (a Forward for a future step), to end it
// (Shutdown), and to open a session of its own. Every call is refused and
// the run ends identical to the uninterrupted in-process run.
func TestIntruderCannotRewriteTheRun(t *testing.T) {
	root := t.TempDir()
	base, ref := faultBase(t, root)
	r := startFault(t, base, root)
	m := r.intruder(t)
	attacked := make(chan []error, 1)
	hookAt(r, 10, func() error {
		ctx := context.Background()
		var errs []error
		errs = append(errs, m.Checkpoint(ctx, 0), m.Shutdown(ctx, ""))
		_, err := m.Exchange(ctx, forward(transport.Train, 30, 0, 64, base.CutDim()))
		errs = append(errs, err)
		_, err = m.Hello(ctx, transport.Hello{Party: "passive", Config: helloPrint(r.pas)})
		errs = append(errs, err)
		attacked <- errs
		return nil
	})
	if _, err := r.passive(context.Background()); err != nil {
		t.Fatalf("passive: %v\n%s", err, r.logText())
	}
	if res := r.activeEnd(); res.err != nil {
		t.Fatalf("active: %v", res.err)
	}
	errs := <-attacked
	for i, want := range []string{"without the session", "without the session", "without the session", "another session of this run is live"} {
		if errs[i] == nil || !strings.Contains(errs[i].Error(), want) {
			t.Errorf("intrusion %d: %v, want a refusal containing %q", i, errs[i], want)
		}
	}
	r.sameAsReference(ref)
}

// forward is a well-formed training message of rows×cols.
func forward(phase transport.Phase, step int64, batch, rows, cols int) *transport.Forward {
	f := &transport.Forward{Phase: phase, Step: step, Batch: batch, Embedding: tensor.New(rows, cols)}
	for i := range rows {
		f.IDs = append(f.IDs, uint64(i))
	}
	return f
}

// TestRollbackStopsAtAcknowledged: the passive is killed after its
// checkpoint of step 15 (both parties acknowledged step 10) and comes back
// without its checkpoints (a restarted passive that lost its disk, or an
// impostor with its certificate and data): it asks to start over at step 0.
// The active refuses to go behind step 10, keeps the records, and ends
// the run with a truncated summary and an error (the code before this test
// rolled back to 0 and erased the record).
func TestRollbackStopsAtAcknowledged(t *testing.T) {
	root := t.TempDir()
	base, ref := faultBase(t, root)
	r := startFault(t, base, root)
	killPassiveAfter(r, 15)
	if _, err := r.passive(context.Background()); !errors.Is(err, errKilled) {
		t.Fatalf("the killed passive: %v", err)
	}
	r.saved = nil
	if err := os.RemoveAll(r.pas.checkpointDir()); err != nil {
		t.Fatal(err)
	}
	r.px.up()
	_, err := r.passive(context.Background())
	if err == nil || !strings.Contains(err.Error(), "refusing to go back to step 0: both parties acknowledged the checkpoint of step 10") {
		t.Fatalf("the passive without checkpoints: %v", err)
	}
	res := r.activeEnd()
	if res.err == nil {
		t.Fatal("the active party ended without an error")
	}
	got := readLines[rundir.BatchRecord](t, filepath.Join(r.act.Out, "batches.jsonl"))
	want := readLines[rundir.BatchRecord](t, filepath.Join(ref, "batches.jsonl"))
	if len(got) < 15 {
		t.Fatalf("%d batch records kept, want the 15 steps done", len(got))
	}
	for i := range got {
		if got[i].Step != want[i].Step || got[i].Loss != want[i].Loss {
			t.Fatalf("batch %d: %+v, the reference %+v", i, got[i], want[i])
		}
	}
	sum := readSummary(t, r.act.Out)
	if !sum.Truncated || !strings.Contains(sum.TruncatedReason, "aborted") {
		t.Fatalf("summary: truncated %v, reason %q", sum.Truncated, sum.TruncatedReason)
	}
}

func readSummary(t *testing.T, dir string) rundir.Summary {
	t.Helper()
	s, err := rundir.ReadSummary(dir)
	if err != nil {
		t.Fatal(err)
	}
	return *s
}

// TestEarlyEndIsTruncated: a passive that ends the run before its planned
// steps, by an abort or by a normal Shutdown, makes the active party
// return an error and (when there is an evaluation to summarise) write a
// summary marked truncated with the reason. Before, a normal Shutdown
// after a few steps gave a summary like a complete run's and no error.
func TestEarlyEndIsTruncated(t *testing.T) {
	root := t.TempDir()
	base := smallConfig(synthFile(t, faultRows), filepath.Join(root, "inproc"))
	base.Attacks = []string{"norm"}
	t.Run("abort", func(t *testing.T) {
		r := startFault(t, base, filepath.Join(root, "abort"))
		hookAt(r, 10, func() error { return errors.New("the operator stopped it") })
		if _, err := r.passive(context.Background()); err == nil {
			t.Fatal("the passive did not fail")
		}
		res := r.activeEnd()
		if res.err == nil || !strings.Contains(res.err.Error(), "the operator stopped it") {
			t.Fatalf("active: %v", res.err)
		}
		sum := readSummary(t, r.act.Out)
		if !sum.Truncated || !strings.Contains(sum.TruncatedReason, "the operator stopped it") || sum.Steps != 10 {
			t.Fatalf("summary: truncated %v, reason %q, steps %d", sum.Truncated, sum.TruncatedReason, sum.Steps)
		}
	})
	t.Run("normal shutdown", func(t *testing.T) {
		r := startFault(t, base, filepath.Join(root, "shutdown"))
		c := r.intruder(t) // the only client: it holds the session
		ctx := context.Background()
		if _, err := c.Hello(ctx, transport.Hello{Party: "passive", Config: helloPrint(r.pas)}); err != nil {
			t.Fatal(err)
		}
		ids := make([]uint64, faultRows)
		for i := range ids {
			ids[i] = uint64(i)
		}
		if _, err := alignIDs(ids, func(q *psi.Request) (*psi.Response, error) { return c.PSI(ctx, q) }); err != nil {
			t.Fatal(err)
		}
		if err := c.Checkpoint(ctx, 0); err != nil {
			t.Fatal(err)
		}
		if err := c.Shutdown(ctx, ""); err != nil {
			t.Fatal(err)
		}
		res := r.activeEnd()
		if res.err == nil || !strings.Contains(res.err.Error(), "ended the run after 0 of") {
			t.Fatalf("active: %v", res.err)
		}
	})
}

// TestStalledPeer: the link stalls for a second (longer than the exchange
// timeout) just before step 10 is sent; the passive re-sends, the active
// answers the re-sent step without applying it twice, and the run ends
// identical to the in-process run.
func TestStalledPeer(t *testing.T) {
	root := t.TempDir()
	base, ref := faultBase(t, root)
	r := startFault(t, base, root)
	r.pas.ExchangeTimeout = 300 * time.Millisecond
	hookAt(r, 10, func() error {
		r.px.setStall(true)
		time.AfterFunc(time.Second, func() { r.px.setStall(false) })
		return nil
	})
	res, err := r.passive(context.Background())
	if err != nil {
		t.Fatalf("passive: %v\n%s", err, r.logText())
	}
	if a := r.activeEnd(); a.err != nil {
		t.Fatalf("active: %v", a.err)
	}
	if res.Stats.Retries < 1 {
		t.Errorf("the passive re-sent %d times, want ≥ 1", res.Stats.Retries)
	}
	// The step's time split counts every training step, and both parts.
	if tm := res.Timing; tm.Steps != res.Steps || tm.Compute <= 0 || tm.Exchange <= 0 {
		t.Errorf("timing %+v over %d steps", tm, res.Steps)
	}
	r.sameAsReference(ref)
}

// TestActiveDiskFull: the active party's disk fills up after both
// parties checkpointed step 10. The active ends the run with an error
// saying so and a summary marked truncated, its checkpoint of step 10
// intact; once space is freed, both parties restart and the run ends
// identical to the uninterrupted in-process run.
func TestActiveDiskFull(t *testing.T) {
	disk := atomicfiletest.SmallDisk(t, "8m")
	root := t.TempDir()
	base, ref := faultBase(t, root)
	r := startFault(t, base, disk)
	filler := filepath.Join(disk, "filler")
	hookAt(r, 10, func() error { return atomicfiletest.Fill(filler) })
	if _, err := r.passive(context.Background()); err == nil || !strings.Contains(err.Error(), "incident") {
		t.Fatalf("passive: %v, want the active's abort (an incident number)", err)
	}
	res := r.activeEnd()
	if res.err == nil || !strings.Contains(res.err.Error(), "no space left on device") {
		t.Fatalf("active: %v", res.err)
	}
	sum := readSummary(t, r.act.Out)
	if !sum.Truncated || !strings.Contains(sum.TruncatedReason, "no space left") {
		t.Fatalf("summary: truncated %v, reason %q", sum.Truncated, sum.TruncatedReason)
	}
	st := store{dir: r.act.checkpointDir(), role: "active"}
	if _, err := st.load(10); err != nil {
		t.Fatalf("the last checkpoint: %v", err)
	}
	r.saved = nil
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	r2 := startFault(t, base, disk)
	if _, err := r2.passive(context.Background()); err != nil {
		t.Fatalf("passive after the disk was freed: %v\n%s", err, r2.logText())
	}
	if res := r2.activeEnd(); res.err != nil {
		t.Fatalf("active after the disk was freed: %v", res.err)
	}
	r2.sameAsReference(ref)
}

// TestLinkCutMidRun: the link is cut at a phase of the run and restored
// half a second later: during the ID alignment (right after the
// session's Hello), while training steps are in flight (a Forward sent, a
// gradient on its way), and during an evaluation round. The passive
// re-sends on a new connection with its session token (or starts a new
// session), the active answers a re-sent step without applying it twice,
// and the run ends identical to the in-process run.
func TestLinkCutMidRun(t *testing.T) {
	root := t.TempDir()
	base, ref := faultBase(t, root)
	lines := func(path string, n int) func(*faultRun) bool {
		return func(r *faultRun) bool {
			b, err := os.ReadFile(filepath.Join(r.act.Out, path))
			return err == nil && bytes.Count(b, []byte("\n")) >= n
		}
	}
	for _, tc := range []struct {
		phase string
		when  func(*faultRun) bool
	}{
		{"alignment", func(r *faultRun) bool { return strings.Contains(r.logText(), "session started") }},
		{"training step", lines("batches.jsonl", 12)},
		{"evaluation", lines("eval.jsonl", 1)},
	} {
		t.Run(tc.phase, func(t *testing.T) {
			r := startFault(t, base, filepath.Join(root, strings.ReplaceAll(tc.phase, " ", "-")))
			cutOnce(t, r, tc.when)
			r.sameAsReference(ref)
		})
	}
}

// cutOnce runs r's passive party to its end, cutting the link for half a
// second once when(r) holds, and fails t unless the link was cut and both
// parties ended without an error.
func cutOnce(t *testing.T, r *faultRun, when func(*faultRun) bool) {
	t.Helper()
	stop := make(chan struct{})
	cut := make(chan bool, 1)
	go func() {
		for {
			select {
			case <-stop:
				cut <- false
				return
			case <-time.After(time.Millisecond):
			}
			if when(r) {
				r.px.cut()
				time.Sleep(500 * time.Millisecond)
				r.px.up()
				cut <- true
				return
			}
		}
	}()
	_, err := r.passive(context.Background())
	close(stop)
	if !<-cut {
		t.Fatal("the run ended before the link was cut")
	}
	if err != nil {
		t.Fatalf("passive: %v\n%s", err, r.logText())
	}
	if res := r.activeEnd(); res.err != nil {
		t.Fatalf("active: %v", res.err)
	}
}

// helloPrint is the fingerprint the passive party of configuration c
// sends in its Hello: that of c as given, resolved like the party does.
func helloPrint(c Config) transport.Fingerprint {
	c.resolve()
	return c.fingerprint()
}
