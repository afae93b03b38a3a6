package netrun

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/splitguard/splitguard/config"
	"github.com/splitguard/splitguard/run"
	"github.com/splitguard/splitguard/rundir"
)

// TestEncodedNetworkedMatchesInProcess trains with compact wire encodings
// on both directions (f16, bf16, int8, int4) in process and as two parties over
// mutual TLS, and checks that the records agree bit for bit (the parties
// round, the transport packs losslessly), that they differ from the f32
// run's (the rounding is applied), and that config.yaml records the
// encodings. int8 and int4 with error feedback (wire_feedback) are two
// more rows: the residuals the active keeps must give the same records in
// both modes and differ from the plain encoding's. The test AUCs are logged, not
// asserted: the data is tiny.
func TestEncodedNetworkedMatchesInProcess(t *testing.T) {
	path := synthFile(t, 900)
	root := t.TempDir()
	ref := smallConfig(path, filepath.Join(root, "f32"))
	f32, err := run.Train(context.Background(), ref, run.Options{})
	if err != nil {
		t.Fatal(err)
	}
	f32Evals := readLines[rundir.EvalRecord](t, filepath.Join(ref.Out, "eval.jsonl"))
	evals := map[string][]rundir.EvalRecord{}
	for _, tc := range []struct {
		name, enc string
		feedback  bool
	}{{"f16", "f16", false}, {"bf16", "bf16", false}, {"int8", "int8", false}, {"int8+ef", "int8", true},
		{"int4", "int4", false}, {"int4+ef", "int4", true}} {
		enc := tc.enc
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(root, tc.name)
			base := smallConfig(path, filepath.Join(dir, "inproc"))
			base.WireEmbedding, base.WireGradient, base.WireFeedback = enc, enc, tc.feedback
			want, err := run.Train(context.Background(), base, run.Options{})
			if err != nil {
				t.Fatal(err)
			}
			act, pas := partyConfigs(base, dir, newTestPKI(t))
			got := pair(t, act, pas)
			w := readLines[rundir.EvalRecord](t, filepath.Join(base.Out, "eval.jsonl"))
			if g := readLines[rundir.EvalRecord](t, filepath.Join(act.Out, "eval.jsonl")); !reflect.DeepEqual(g, w) || len(w) < 3 {
				t.Fatalf("evaluations differ:\n got %v\nwant %v", g, w)
			}
			if reflect.DeepEqual(w, f32Evals) {
				t.Errorf("the %s run's evaluations equal the f32 run's: nothing was rounded", tc.name)
			}
			evals[tc.name] = w
			if tc.feedback && reflect.DeepEqual(w, evals[enc]) {
				t.Errorf("the %s run's evaluations equal the %s run's: error feedback changed nothing", tc.name, enc)
			}
			sameBatches(t, act.Out, base.Out, 1)
			if got.TestAUCFinal != want.TestAUCFinal || got.TrainLossFinal != want.TrainLossFinal || got.Steps != want.Steps {
				t.Fatalf("summaries differ:\n got %+v\nwant %+v", got, want)
			}
			for _, d := range []string{act.Out, pas.Out, base.Out} {
				b, err := os.ReadFile(filepath.Join(d, rundir.ConfigFile))
				if err != nil {
					t.Fatal(err)
				}
				if !strings.Contains(string(b), "wire_embedding: "+enc+"\n") || !strings.Contains(string(b), "wire_gradient: "+enc+"\n") {
					t.Errorf("%s does not record the encodings %s", filepath.Join(d, rundir.ConfigFile), enc)
				}
				if tc.feedback != strings.Contains(string(b), "wire_feedback: true\n") {
					t.Errorf("%s records error feedback wrongly (want %t)", filepath.Join(d, rundir.ConfigFile), tc.feedback)
				}
			}
			t.Logf("test AUC %s %.6f, f32 %.6f; %d steps", tc.name, got.TestAUCFinal, f32.TestAUCFinal, got.Steps)
		})
	}
}

// TestWireMismatchNamed: parties configured with different encodings are
// refused at Hello, both naming the key that differs: int8 gradients
// against f32, and int4 embeddings against int8.
func TestWireMismatchNamed(t *testing.T) {
	path, certs := synthFile(t, 200), newTestPKI(t)
	for _, tc := range []struct {
		name, key string
		edit      func(act, pas *Config)
	}{
		{"int8/f32", "wire_gradient", func(act, _ *Config) { act.WireGradient = "int8" }},
		{"int4/int8", "wire_embedding", func(act, pas *Config) { act.WireEmbedding, pas.WireEmbedding = "int4", "int8" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			base := smallConfig(path, filepath.Join(root, "unused"))
			act, pas := partyConfigs(base, root, certs)
			tc.edit(&act, &pas)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			var done <-chan error
			pas.Addr, done = goActive(t, ctx, act)
			want := "key " + tc.key
			_, err := RunPassive(ctx, pas, Options{Logger: testLogger(t)})
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("passive: %v, want an error containing %q", err, want)
			}
			if keys := config.KeysOf(err); !slices.Equal(keys, []string{tc.key}) {
				t.Errorf("passive: keys %v, want [%s]", keys, tc.key)
			}
			cancel()
			<-done
		})
	}
}
