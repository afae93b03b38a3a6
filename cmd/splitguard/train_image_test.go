package main

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/splitguard/splitguard/config"
	"github.com/splitguard/splitguard/data/images"
	"github.com/splitguard/splitguard/protect"
)

// TestEveryTrainFlagIsAConfigKey checks the promise of trainFlags: each
// flag is the config.Config field whose YAML key is the flag's name with
// underscores, bound to that field.
func TestEveryTrainFlagIsAConfigKey(t *testing.T) {
	var c config.Config
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	trainFlags(fs, &c)
	byKey := map[string]reflect.Value{}
	v := reflect.ValueOf(&c).Elem()
	for i := range v.NumField() {
		key, _, _ := strings.Cut(v.Type().Field(i).Tag.Get("yaml"), ",")
		byKey[key] = v.Field(i)
	}
	n := 0
	fs.VisitAll(func(f *pflag.Flag) {
		n++
		if f.Hidden {
			return // an older spelling of another flag (--id for --id-col)
		}
		key := strings.ReplaceAll(f.Name, "-", "_")
		if owner, ok := protect.ParamOwner(key); ok {
			// A defence parameter: its value goes to Params[key] (a
			// whole-number parameter gets its least valid value, at least 1).
			want := 0.375
			for _, par := range owner.Params {
				if par.Key == key && par.Int {
					want = math.Max(par.Min, 1)
				}
			}
			val := strconv.FormatFloat(want, 'g', -1, 64)
			if err := f.Value.Set(val); err != nil || c.Params[key] != want {
				t.Errorf("--%s %s: err %v, Params[%s] = %v", f.Name, val, err, key, c.Params[key])
			}
			return
		}
		field, ok := byKey[key]
		if !ok {
			t.Errorf("flag --%s has no config key %s", f.Name, key)
			return
		}
		// Setting the flag must change that field.
		before := field.Interface()
		val := map[reflect.Kind]string{reflect.String: "zz", reflect.Bool: "true", reflect.Float64: "0.375",
			reflect.Int: "7", reflect.Int64: "7", reflect.Uint64: "7", reflect.Slice: "7", reflect.Map: "zz=7", reflect.Pointer: "0.375"}[field.Kind()]
		if err := f.Value.Set(val); err != nil {
			t.Errorf("--%s %s: %v", f.Name, val, err)
			return
		}
		if reflect.DeepEqual(before, field.Interface()) {
			t.Errorf("--%s is not bound to the config field %s", f.Name, key)
		}
	})
	if n < 40 {
		t.Fatalf("only %d flags visited", n)
	}
}

func TestTrainFashionMNISTFromTheCLI(t *testing.T) {
	if _, err := os.Stat(filepath.Join(images.FashionMNISTDir, "t10k-labels-idx1-ubyte.gz")); err != nil {
		t.Skip("Fashion-MNIST is not installed (apt-get install dataset-fashion-mnist)")
	}
	out := t.TempDir()
	cmd := newRootCmd()
	var stdout, stderr bytes.Buffer
	cmd.SetOut(&stdout)
	cmd.SetErr(&stderr)
	cmd.SetArgs([]string{"train", "--format", "fashion-mnist", "--positive-class", "1", "--pos-rate", "0.1",
		"--model", "cnn", "--cnn-blocks", "2", "--cnn-channels", "4", "--cnn-dense", "8", "--cut", "1",
		"--batch", "64", "--max-steps", "2", "--attacks", "norm,cosine", "--out", out})
	if err := cmd.Execute(); err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	cfg, err := config.LoadFile(filepath.Join(out, "config.yaml"), config.Default())
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Data != images.FashionMNISTDir || cfg.LR != 1e-5 || cfg.ImageSize != 28 || cfg.EvalBatch != 64 || cfg.Cut != 1 {
		t.Fatalf("resolved config %+v", cfg)
	}
	for _, k := range []string{"norm/cut", "cosine/cut", "test AUC best"} {
		if !strings.Contains(stdout.String(), k) {
			t.Errorf("summary lacks %q:\n%s", k, stdout.String())
		}
	}
	// The wrong model for the data fails before loading anything.
	cmd = newRootCmd()
	cmd.SetOut(&stdout)
	cmd.SetErr(&stderr)
	cmd.SetArgs([]string{"train", "--format", "fashion-mnist", "--out", t.TempDir()})
	if err := cmd.Execute(); err == nil || !strings.Contains(err.Error(), "needs model cnn (--model)") {
		t.Fatalf("wdl on fashion-mnist: %v", err)
	}
}
