package netrun

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/splitguard/splitguard/run"
	"github.com/splitguard/splitguard/rundir"
)

// TestCompressedNetworkedMatchesUncompressed trains two parties over
// mutual TLS with int4 both ways, without compression and with zstd
// (key wire_compression): every file both parties write is the same byte
// for byte (checkpoints included), but for config.yaml, which records the
// key (and must), and the timings in the JSON records (sameFiles); the
// passive sends fewer bytes with zstd and receives no more than the 2
// bytes the key adds to the Hello answer (a gradient that does not
// compress goes uncompressed).
func TestCompressedNetworkedMatchesUncompressed(t *testing.T) {
	path, certs := synthFile(t, 900), newTestPKI(t)
	root := t.TempDir()
	type result struct {
		act, pas    string
		sent, recvd int64
	}
	runs := map[string]result{}
	for _, comp := range []string{"none", "zstd"} {
		dir := filepath.Join(root, comp)
		base := smallConfig(path, filepath.Join(dir, "unused"))
		base.WireEmbedding, base.WireGradient, base.WireCompression = "int4", "int4", comp
		// A cut 64 wide (messages large enough to compress) and a
		// protection without timings of its own in the checkpoints.
		base.Layers, base.Batch = []int{64, 64, 64}, 128
		base.Protect, base.Params = "max_norm", nil
		act, pas := partyConfigs(base, dir, certs)
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		var wait func() (*rundir.Summary, error)
		pas.Addr, wait = startActiveWith(t, ctx, act, Options{})
		res, err := RunPassive(ctx, pas, Options{Logger: testLogger(t)})
		if err != nil {
			t.Fatalf("%s: passive: %v", comp, err)
		}
		if _, err := wait(); err != nil {
			t.Fatalf("%s: active: %v", comp, err)
		}
		cancel()
		runs[comp] = result{act.Out, pas.Out, res.Stats.BytesSent, res.Stats.BytesReceived}
		for _, d := range []string{act.Out, pas.Out} {
			b, err := os.ReadFile(filepath.Join(d, rundir.ConfigFile))
			if err != nil {
				t.Fatal(err)
			}
			if rec := strings.Contains(string(b), "\nwire_compression: zstd\n"); rec != (comp == "zstd") {
				t.Errorf("%s: %s records wire_compression: %t", comp, filepath.Join(d, rundir.ConfigFile), rec)
			}
		}
	}
	plain, z := runs["none"], runs["zstd"]
	// In process there is no wire: the key is recorded and changes
	// nothing, so the evaluations are the two-process run's.
	inproc := smallConfig(path, filepath.Join(root, "inproc"))
	inproc.WireEmbedding, inproc.WireGradient, inproc.WireCompression = "int4", "int4", "zstd"
	inproc.Layers, inproc.Batch = []int{64, 64, 64}, 128
	inproc.Protect, inproc.Params = "max_norm", nil
	if _, err := run.Train(context.Background(), inproc, run.Options{}); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(inproc.Out, rundir.ConfigFile)); err != nil || !strings.Contains(string(b), "\nwire_compression: zstd\n") {
		t.Errorf("the in-process config.yaml does not record wire_compression (%v)", err)
	}
	w := readLines[rundir.EvalRecord](t, filepath.Join(inproc.Out, "eval.jsonl"))
	if g := readLines[rundir.EvalRecord](t, filepath.Join(z.act, "eval.jsonl")); !reflect.DeepEqual(g, w) || len(w) < 2 {
		t.Errorf("evaluations differ between two processes with zstd and in process:\n got %v\nwant %v", g, w)
	}
	for _, d := range [][2]string{{plain.act, z.act}, {plain.pas, z.pas}} {
		n := sameFiles(t, d[0], d[1], rundir.ConfigFile)
		if n < 3 {
			t.Errorf("%s: only %d files compared", d[0], n)
		}
	}
	if z.sent >= plain.sent || z.recvd > plain.recvd+2 {
		t.Errorf("the passive sent %d and received %d bytes with zstd, %d and %d without", z.sent, z.recvd, plain.sent, plain.recvd)
	}
	t.Logf("passive bytes sent %d → %d, received %d → %d with zstd", plain.sent, z.sent, plain.recvd, z.recvd)
}

// sameFiles checks that every regular file under want is in got with the
// same bytes, and none more, but for the files named skip and, in JSON
// files (.json, .jsonl), the values of timing keys (timingKey); it
// returns how many it compared.
func sameFiles(t *testing.T, want, got string, skip ...string) int {
	t.Helper()
	list := func(root string) map[string]bool {
		files := map[string]bool{}
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil || !d.Type().IsRegular() {
				return err
			}
			rel, _ := filepath.Rel(root, p)
			for _, s := range skip {
				if rel == s {
					return nil
				}
			}
			files[rel] = true
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return files
	}
	w, g := list(want), list(got)
	for rel := range g {
		if !w[rel] {
			t.Errorf("%s: %s is not in %s", got, rel, want)
		}
	}
	for rel := range w {
		if !g[rel] {
			t.Errorf("%s: %s is missing (it is in %s)", got, rel, want)
			continue
		}
		a, err := os.ReadFile(filepath.Join(want, rel))
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(got, rel))
		if err != nil {
			t.Fatal(err)
		}
		if ext := filepath.Ext(rel); ext == ".json" || ext == ".jsonl" {
			a, b = withoutTimings(t, a), withoutTimings(t, b)
		}
		if !bytes.Equal(a, b) {
			t.Errorf("%s differs between %s and %s%s", rel, want, got, firstDiff(a, b))
		}
	}
	return len(w)
}

// firstDiff quotes the first line in which a and b differ, for text.
func firstDiff(a, b []byte) string {
	la, lb := bytes.Split(a, []byte("\n")), bytes.Split(b, []byte("\n"))
	for i := range min(len(la), len(lb)) {
		if !bytes.Equal(la[i], lb[i]) && utf8.Valid(la[i]) {
			return fmt.Sprintf(": line %d\n%.400s\n%.400s", i+1, la[i], lb[i])
		}
	}
	return ""
}

// timingKey reports whether a JSON record's key holds a wall-clock
// figure, which differs between any two runs.
func timingKey(k string) bool {
	return k == "seconds" || k == "examples_per_s" || strings.HasSuffix(k, "_ms") || strings.HasSuffix(k, "_ms_mean")
}

// withoutTimings re-encodes JSON text (one document, or one per line)
// without the timing keys at any depth.
func withoutTimings(t *testing.T, b []byte) []byte {
	t.Helper()
	var strip func(v any) any
	strip = func(v any) any {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				if timingKey(k) {
					delete(x, k)
				} else {
					x[k] = strip(e)
				}
			}
		case []any:
			for i, e := range x {
				x[i] = strip(e)
			}
		}
		return v
	}
	var out bytes.Buffer
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	for {
		var v any
		if err := dec.Decode(&v); err == io.EOF {
			return out.Bytes()
		} else if err != nil {
			t.Fatal(err)
		}
		e, err := json.Marshal(strip(v))
		if err != nil {
			t.Fatal(err)
		}
		out.Write(append(e, '\n'))
	}
}
