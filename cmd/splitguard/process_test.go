package main

// Process tests: the splitguard binary, built once in TestMain, run as two
// processes over mutual TLS on loopback.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/splitguard/splitguard/data"
)

// binary is the splitguard executable built by TestMain ("" if the build
// failed; the process tests then fail with the build output).
var binary, buildErr string

func TestMain(m *testing.M) {
	if os.Getenv(testCLIEnv) == "1" {
		// The test binary acting as the CLI, with the plug-ins that test
		// files register (plugin_test.go): a sweep's child processes.
		main()
		os.Exit(0)
	}
	dir, err := os.MkdirTemp("", "splitguard-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "splitguard")
	if out, err := exec.Command("go", "build", "-o", binary, ".").CombinedOutput(); err != nil {
		binary, buildErr = "", fmt.Sprintf("go build: %v\n%s", err, out)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func needBinary(t *testing.T) {
	t.Helper()
	if binary == "" {
		t.Fatal(buildErr)
	}
}

// sg runs the binary to completion and returns its standard output.
func sg(t *testing.T, dir string, args ...string) string {
	t.Helper()
	needBinary(t)
	cmd := exec.Command(binary, args...)
	cmd.Dir = dir
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("splitguard %s: %v\n%s%s", strings.Join(args, " "), err, out.String(), errb.String())
	}
	return out.String()
}

// proc is a splitguard process running in the background whose standard
// error is scanned line by line.
type proc struct {
	t    *testing.T
	name string
	cmd  *exec.Cmd
	out  bytes.Buffer
	done chan error

	mu    sync.Mutex
	log   strings.Builder
	watch []watcher
}

type watcher struct {
	match func(string) bool
	ch    chan string
}

func start(t *testing.T, dir, name string, args ...string) *proc {
	t.Helper()
	needBinary(t)
	p := &proc{t: t, name: name, cmd: exec.Command(binary, args...), done: make(chan error, 1)}
	p.cmd.Dir = dir
	p.cmd.Stdout = &p.out
	stderr, err := p.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			line := sc.Text()
			p.mu.Lock()
			p.log.WriteString(line + "\n")
			keep := p.watch[:0]
			for _, w := range p.watch {
				if w.match(line) {
					w.ch <- line
				} else {
					keep = append(keep, w)
				}
			}
			p.watch = keep
			p.mu.Unlock()
		}
		p.done <- p.cmd.Wait()
	}()
	t.Cleanup(func() {
		if p.cmd.ProcessState == nil {
			_ = p.cmd.Process.Kill() // our own child, by its PID
		}
	})
	return p
}

// await waits for a log line for which match is true.
func (p *proc) await(match func(string) bool, timeout time.Duration) string {
	p.t.Helper()
	ch := make(chan string, 1)
	p.mu.Lock()
	for _, l := range strings.Split(p.log.String(), "\n") {
		if match(l) {
			p.mu.Unlock()
			return l
		}
	}
	p.watch = append(p.watch, watcher{match, ch})
	p.mu.Unlock()
	select {
	case l := <-ch:
		return l
	case <-time.After(timeout):
		p.t.Fatalf("%s: no matching log line within %v; log:\n%s", p.name, timeout, p.logText())
	}
	return ""
}

func (p *proc) logText() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.log.String()
}

// wait waits for the process to exit and returns its error.
func (p *proc) wait(timeout time.Duration) error {
	p.t.Helper()
	select {
	case err := <-p.done:
		return err
	case <-time.After(timeout):
		p.t.Fatalf("%s still running after %v; log:\n%s", p.name, timeout, p.logText())
	}
	return nil
}

// kill sends SIGKILL and waits for the process to die.
func (p *proc) kill() {
	p.t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		p.t.Fatal(err)
	}
	_ = p.wait(10 * time.Second)
}

// freeAddr returns a loopback address with a port that was free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// fixture is a data file, certificates and the training flags of the
// process tests.
type fixture struct {
	dir   string
	train []string
}

var (
	fixOnce sync.Once
	fix     fixture
	fixErr  string
	// reference is an uninterrupted two-process run of fix (its run
	// directories), made once.
	refOnce            sync.Once
	refActive, refPass string
)

func getFixture(t *testing.T) fixture {
	t.Helper()
	needBinary(t)
	fixOnce.Do(func() {
		dir, err := os.MkdirTemp("", "splitguard-proc-")
		if err != nil {
			fixErr = err.Error()
			return
		}
		run := func(args ...string) {
			if fixErr != "" {
				return
			}
			cmd := exec.Command(binary, args...)
			cmd.Dir = dir
			if out, err := cmd.CombinedOutput(); err != nil {
				fixErr = fmt.Sprintf("splitguard %v: %v\n%s", args, err, out)
			}
		}
		run("data", "synth", "--rows", "4000", "--out", "data.txt")
		run("certs", "init", "--dir", "pki")
		run("certs", "issue", "--dir", "pki", "--name", "active", "--host", "127.0.0.1")
		run("certs", "issue", "--dir", "pki", "--name", "passive")
		run("certs", "issue", "--dir", "pki", "--name", "mallory")
		run("certs", "init", "--dir", "other")
		run("certs", "issue", "--dir", "other", "--name", "passive")
		run("certs", "issue", "--dir", "other", "--name", "active", "--host", "127.0.0.1")
		fix = fixture{dir: dir, train: []string{"--data", "data.txt", "--layers", "16,8,8", "--cut", "2", "--embed-dim", "2",
			"--batch", "64", "--epochs", "2", "--eval-every", "20", "--lr", "1e-3", "--seed", "3", "--test-frac", "0.2",
			"--hash-buckets", "1000", "--protect", "marvell", "--marvell-s", "2", "--attacks", "norm,cosine,spectral"}}
	})
	if fixErr != "" {
		t.Fatal(fixErr)
	}
	return fix
}

func activeArgs(f fixture, out, addr string, extra ...string) []string {
	a := append([]string{"active", "--out", out, "--addr", addr, "--cert-dir", "pki", "--name", "active", "--peer-name", "passive",
		"--checkpoint-every", "5", "--peer-timeout", "60s"}, f.train...)
	return append(a, extra...)
}

func passiveArgs(f fixture, out, addr string, extra ...string) []string {
	a := append([]string{"passive", "--out", out, "--addr", addr, "--cert-dir", "pki", "--name", "passive", "--peer-name", "active",
		"--checkpoint-every", "5", "--peer-timeout", "60s"}, f.train...)
	return append(a, extra...)
}

// runPair runs an uninterrupted two-process training run into the run
// directories act and pas (relative to the fixture directory).
func runPair(t *testing.T, f fixture, act, pas string) {
	t.Helper()
	addr := freeAddr(t)
	a := start(t, f.dir, "active", activeArgs(f, act, addr)...)
	a.await(func(l string) bool { return strings.Contains(l, "listening on") }, 20*time.Second)
	p := start(t, f.dir, "passive", passiveArgs(f, pas, addr)...)
	if err := p.wait(60 * time.Second); err != nil {
		t.Fatalf("passive: %v\n%s", err, p.logText())
	}
	if err := a.wait(30 * time.Second); err != nil {
		t.Fatalf("active: %v\n%s", err, a.logText())
	}
}

func reference(t *testing.T) (act, pas string) {
	t.Helper()
	f := getFixture(t)
	refOnce.Do(func() {
		runPair(t, f, "ref-active", "ref-passive")
		refActive, refPass = filepath.Join(f.dir, "ref-active"), filepath.Join(f.dir, "ref-passive")
	})
	if refActive == "" {
		t.Fatal("the reference run failed (see the first test that made it)")
	}
	return refActive, refPass
}

func readJSON(t *testing.T, path string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestProcessesMatchTrain runs the two parties as processes over mutual
// TLS and `splitguard train` on the same flags: the summaries agree on
// every result (timings aside; the networked leak keys are the cut
// layer's) and the evaluations are identical.
func TestProcessesMatchTrain(t *testing.T) {
	f := getFixture(t)
	act, _ := reference(t)
	sg(t, f.dir, append([]string{"train", "--out", "inproc"}, f.train...)...)
	got, want := readJSON(t, filepath.Join(act, "summary.json")), readJSON(t, filepath.Join(f.dir, "inproc", "summary.json"))
	for _, k := range []string{"test_auc_final", "test_auc_best", "best_step", "test_loss_final", "ace_final", "train_loss_final",
		"steps", "examples", "train_rows", "test_rows", "train_pos_rate"} {
		if fmt.Sprint(got[k]) != fmt.Sprint(want[k]) || want[k] == nil {
			t.Errorf("summary %s: two processes %v, train %v", k, got[k], want[k])
		}
	}
	gl, wl := got["leak"].(map[string]any), want["leak"].(map[string]any)
	for k, v := range gl {
		if fmt.Sprint(v) != fmt.Sprint(wl[k]) {
			t.Errorf("leak %s: two processes %v, train %v", k, v, wl[k])
		}
	}
	if len(gl) != 3 {
		t.Errorf("leak keys %v, want the three attacks at the cut layer", gl)
	}
	if g, w := readFile(t, filepath.Join(act, "eval.jsonl")), readFile(t, filepath.Join(f.dir, "inproc", "eval.jsonl")); !bytes.Equal(g, w) {
		t.Errorf("eval.jsonl differs:\n%s\nvs\n%s", g, w)
	}
}

// TestKillAndResume kills either party with SIGKILL mid-run (after a
// checkpoint), restarts it with the same command line, and checks that the
// run completes with the same model files, evaluations and per-batch
// records as an uninterrupted run.
func TestKillAndResume(t *testing.T) {
	f := getFixture(t)
	refA, refP := reference(t)
	for _, victim := range []string{"active", "passive"} {
		t.Run(victim, func(t *testing.T) {
			act, pas := "kill-"+victim+"-active", "kill-"+victim+"-passive"
			addr := freeAddr(t)
			a := start(t, f.dir, "active", activeArgs(f, act, addr)...)
			a.await(func(l string) bool { return strings.Contains(l, "listening on") }, 20*time.Second)
			p := start(t, f.dir, "passive", passiveArgs(f, pas, addr)...)
			// Kill after the active party's checkpoint of step 30 (of 100).
			a.await(func(l string) bool {
				return strings.Contains(l, `msg="checkpoint saved"`) && strings.Contains(l, "step=30")
			}, 60*time.Second)
			if victim == "active" {
				a.kill()
				a = start(t, f.dir, "active", activeArgs(f, act, addr)...)
			} else {
				p.kill()
				p = start(t, f.dir, "passive", passiveArgs(f, pas, addr)...)
			}
			if err := p.wait(90 * time.Second); err != nil {
				t.Fatalf("passive: %v\n%s", err, p.logText())
			}
			if err := a.wait(30 * time.Second); err != nil {
				t.Fatalf("active: %v\n%s", err, a.logText())
			}
			sameAsUninterrupted(t, f, a, victim+" killed", act, pas, refA, refP)
		})
	}
}

// sameAsUninterrupted checks that the run in act and pas (the active's
// last process a) resumed from a checkpoint, not from scratch, and ended
// with the same model files, evaluations, summary figures and per-batch
// records as the uninterrupted run in refA and refP.
func sameAsUninterrupted(t *testing.T, f fixture, a *proc, what, act, pas, refA, refP string) {
	t.Helper()
	var resumed string
	for _, l := range strings.Split(a.logText(), "\n") {
		if strings.Contains(l, "msg=resuming") {
			resumed = l // the last one: the resumption after the kill
		}
	}
	t.Logf("%s; the restarted run: %s", what, resumed)
	if strings.Contains(resumed, "step=0") {
		t.Fatalf("the run restarted from scratch instead of a checkpoint: %s", resumed)
	}
	for _, file := range []string{"top.model", "eval.jsonl"} {
		if !bytes.Equal(readFile(t, filepath.Join(f.dir, act, file)), readFile(t, filepath.Join(refA, file))) {
			t.Errorf("%s differs from the uninterrupted run's", file)
		}
	}
	if !bytes.Equal(readFile(t, filepath.Join(f.dir, pas, "bottom.model")), readFile(t, filepath.Join(refP, "bottom.model"))) {
		t.Error("bottom.model differs from the uninterrupted run's")
	}
	got, want := readJSON(t, filepath.Join(f.dir, act, "summary.json")), readJSON(t, filepath.Join(refA, "summary.json"))
	for _, k := range []string{"test_auc_final", "test_loss_final", "train_loss_final", "steps", "leak"} {
		if fmt.Sprint(got[k]) != fmt.Sprint(want[k]) {
			t.Errorf("summary %s: %v after the kill, %v uninterrupted", k, got[k], want[k])
		}
	}
	// Per-batch records without the timings.
	strip := func(b []byte) string {
		var lines []string
		for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			var m map[string]any
			if err := json.Unmarshal([]byte(l), &m); err != nil {
				t.Fatal(err)
			}
			delete(m, "protect_ms")
			if p, ok := m["protection"].(map[string]any); ok {
				delete(p, "solve_ms")
			}
			s, _ := json.Marshal(m)
			lines = append(lines, string(s))
		}
		return strings.Join(lines, "\n")
	}
	if g, w := strip(readFile(t, filepath.Join(f.dir, act, "batches.jsonl"))), strip(readFile(t, filepath.Join(refA, "batches.jsonl"))); g != w {
		t.Error("batches.jsonl differs from the uninterrupted run's")
	}
}

// TestRefusedCertificates: a passive party with a certificate from another
// CA, or expecting another name for the active party, is refused at the
// TLS handshake; the passive exits at once (not after its peer timeout of
// 60 s) with a message naming the cause, and the active logs the refusal.
func TestRefusedCertificates(t *testing.T) {
	f := getFixture(t)
	addr := freeAddr(t)
	a := start(t, f.dir, "active", activeArgs(f, "refused-active", addr)...)
	a.await(func(l string) bool { return strings.Contains(l, "listening on") }, 20*time.Second)
	for _, tc := range []struct {
		name  string
		extra []string
		want  string
	}{
		{"client cert from another CA", []string{"--cert", "other/passive.crt", "--key", "other/passive.key"},
			"the active party at " + addr + " refused this party's certificate"},
		{"server cert from another CA", []string{"--ca", "other/ca.crt"}, "certificate signed by unknown authority"},
		{"server cert for another name", []string{"--peer-name", "mallory"}, "certificate is valid for active, not mallory"},
		{"client cert for another name", []string{"--name", "mallory"}, "the active party at " + addr + " refused this party's certificate"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			begin := time.Now()
			p := start(t, f.dir, "passive", passiveArgs(f, "refused-passive", addr, tc.extra...)...)
			err := p.wait(30 * time.Second)
			took := time.Since(begin)
			log := p.logText()
			if err == nil {
				t.Fatalf("the passive party was not refused:\n%s", log)
			}
			if !strings.Contains(log, "TLS handshake with the active party failed") || !strings.Contains(log, tc.want) {
				t.Fatalf("the error does not name the cause (want %q):\n%s", tc.want, log)
			}
			if took > 15*time.Second {
				t.Fatalf("refused after %v; a handshake failure must not be retried", took)
			}
			t.Logf("refused in %v: %s", took.Round(time.Millisecond), lastLine(log))
		})
	}
	if !strings.Contains(a.logText(), "refused a TLS client") {
		t.Errorf("the active party did not log the refused client:\n%s", a.logText())
	}
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// TestColumnsProcesses runs the two parties as processes with the feature
// columns split by --columns (the passive I1..I13, the active C1..C26 for
// its wide part): the run trains and each party's encoding lists
// exactly its columns. A passive party asking for a column its file does
// not hold exits at once with an error naming the column.
func TestColumnsProcesses(t *testing.T) {
	f := getFixture(t)
	var dense, cats []string
	for i := 1; i <= 13; i++ {
		dense = append(dense, fmt.Sprintf("I%d", i))
	}
	for i := 1; i <= 26; i++ {
		cats = append(cats, fmt.Sprintf("C%d", i))
	}
	addr := freeAddr(t)
	a := start(t, f.dir, "active", activeArgs(f, "cols-active", addr, "--columns", strings.Join(cats, ","))...)
	a.await(func(l string) bool { return strings.Contains(l, "listening on") }, 20*time.Second)
	p := start(t, f.dir, "passive", passiveArgs(f, "cols-passive", addr, "--columns", strings.Join(dense, ","))...)
	if err := p.wait(60 * time.Second); err != nil {
		t.Fatalf("passive: %v\n%s", err, p.logText())
	}
	if err := a.wait(30 * time.Second); err != nil {
		t.Fatalf("active: %v\n%s", err, a.logText())
	}
	sum := readJSON(t, filepath.Join(f.dir, "cols-active", "summary.json"))
	// 4000 rows, 20% test, 10% of the rest validation: 2849 training
	// rows, 45 batches of 64 an epoch, 2 epochs.
	if auc, ok := sum["test_auc_final"].(float64); !ok || !(auc > 0 && auc < 1) || sum["steps"] != float64(90) || sum["val_rows"] != float64(347) {
		t.Errorf("summary: test AUC %v, %v steps, %v validation rows (want 90 and 347)", sum["test_auc_final"], sum["steps"], sum["val_rows"])
	}
	for dir, want := range map[string][]string{"cols-active": cats, "cols-passive": dense} {
		enc, err := data.LoadEncoding(filepath.Join(f.dir, dir, "encoding"))
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, c := range enc.Columns {
			got = append(got, c.Name)
		}
		if strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("%s/encoding lists %v, want %v", dir, got, want)
		}
	}

	p = start(t, f.dir, "passive", passiveArgs(f, "cols-missing", addr, "--columns", "I1,I2,C27")...)
	err := p.wait(15 * time.Second)
	if log := p.logText(); err == nil || !strings.Contains(log, `requested column "C27" not found`) || !strings.Contains(log, "data.txt") {
		t.Errorf("passive asking for a missing column: %v\n%s", err, log)
	}
}
