package run

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/splitguard/splitguard/attack"
	"github.com/splitguard/splitguard/config"
	"github.com/splitguard/splitguard/data"
	"github.com/splitguard/splitguard/data/datatest"
	"github.com/splitguard/splitguard/data/images" // the image set readers
	"github.com/splitguard/splitguard/protect"
)

func TestResolveDefaults(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*config.Config)
		want func(*config.Config) string // "" when c is as expected
	}{
		{"criteo wdl", func(c *config.Config) {}, func(c *config.Config) string {
			if c.LR != 0 || c.Cut != 3 || c.EvalBatch != 8192 || c.TestFrac != 0.1 || len(c.Layers) != 6 || c.ImageSize != 0 || c.CNNBlocks != 0 {
				return "want lr left to the data (0), cut 3, eval batch 8192, test 0.1, 6 layers, no image or CNN sizes"
			}
			return ""
		}},
		{"isic cnn", func(c *config.Config) { c.Format, c.Model, c.Data, c.Batch = "isic", "cnn", "d", 128 }, func(c *config.Config) string {
			if c.LR != 1e-5 || c.Cut != 4 || c.CNNBlocks != 6 || c.CNNChannels != 64 || c.CNNKernel != 3 || c.CNNDense != 64 ||
				c.ImageSize != 84 || c.ImageChannels != 3 || c.NegPerPos != 9 || c.TestFrac != 0.2 || c.EvalBatch != 128 ||
				c.Layers != nil || c.EmbedDim != 0 || c.L2 != 0 {
				return "want the ISIC model of METHODS §6: lr 1e-5, cut 4 of 6 blocks of 64, 84×84×3, 9 negatives per positive, test 0.2, eval batch = batch, no deep-model settings"
			}
			return ""
		}},
		{"fashion cnn", func(c *config.Config) { c.Format, c.Model, c.CNNBlocks, c.LR = "fashion-mnist", "cnn", 3, 1e-3 }, func(c *config.Config) string {
			if c.Data != images.FashionMNISTDir || c.ImageSize != 28 || c.ImageChannels != 1 || c.TestFrac != 0 || c.Cut != 3 || c.LR != 1e-3 || c.NegPerPos != 0 {
				return "want the Debian folder, 28×28×1, no test fraction, cut = all 3 blocks, lr kept"
			}
			return ""
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := config.Default()
			tc.edit(&c)
			c.Resolve()
			if msg := tc.want(&c); msg != "" {
				t.Fatalf("%s; got %+v", msg, c)
			}
			again := c
			again.Resolve()
			if fmt.Sprint(again) != fmt.Sprint(c) {
				t.Fatalf("Resolve is not idempotent: %+v then %+v", c, again)
			}
		})
	}
}

func TestImageConfigErrors(t *testing.T) {
	fashion := func(c *config.Config) { c.Format, c.Model, c.CNNBlocks = "fashion-mnist", "cnn", 4 }
	for _, tc := range []struct {
		name string
		edit func(*config.Config)
		want string
	}{
		{"cnn on a table", func(c *config.Config) { c.Data, c.Model = "x.tsv", "cnn" }, "model cnn reads images"},
		{"cnn on synthetic rows", func(c *config.Config) { c.SynthRows, c.Model = 100, "cnn" }, "synthetic tabular data"},
		{"wdl on images", func(c *config.Config) { fashion(c); c.Model, c.CNNBlocks = "wdl", 0 }, "needs model cnn"},
		{"mlp with a CNN flag", func(c *config.Config) { c.Data, c.Model, c.CNNChannels = "x.tsv", "mlp", 8 }, "key cnn_channels applies to model cnn"},
		{"too many blocks", func(c *config.Config) { fashion(c); c.CNNBlocks = 6 }, "at most 4 fit"},
		{"cut beyond the blocks", func(c *config.Config) { fashion(c); c.Cut = 5 }, "cut after block 5 of 4"},
		{"fashion test fraction", func(c *config.Config) { fashion(c); c.TestFrac = 0.1 }, "own test files"},
		{"fashion class", func(c *config.Config) { fashion(c); c.PositiveClass = 10 }, "positive class 10"},
		{"image flag on a table", func(c *config.Config) { c.Data, c.PosRate = "x.tsv", 0.1 }, "key pos_rate applies to the image formats"},
		{"table flag on images", func(c *config.Config) { fashion(c); c.Sample = 0.5 }, "key sample applies to tables"},
		{"isic pos rate", func(c *config.Config) { c.Data, c.Format, c.Model, c.PosRate = "d", "isic", "cnn", 0.1 }, "key pos_rate does not apply to the image format isic, which takes neg_per_pos"},
		{"channels", func(c *config.Config) { fashion(c); c.ImageChannels = 2 }, "2 image channels"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := config.Default()
			c.Out = "out"
			tc.edit(&c)
			err := c.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
	// Valid image configs, and Validate leaves the config as it was.
	c := config.Default()
	c.Out = "out"
	fashion(&c)
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if c.LR != 0 || c.Cut != 0 || c.ImageSize != 0 || len(c.Layers) != 6 {
		t.Fatalf("Validate changed the config: %+v", c)
	}
}

func TestBuildModelsRejectsTheWrongData(t *testing.T) {
	img := &data.Features{Rows: 1, NumDense: 16, Dense: make([]float32, 16), Image: &data.ImageShape{Height: 4, Width: 4, Channels: 1}}
	table := &data.Features{Rows: 1, NumDense: 16, Dense: make([]float32, 16)}
	c := config.Default()
	c.Resolve()
	if _, _, _, err := c.BuildModels(img); err == nil || !strings.Contains(err.Error(), "need model cnn") {
		t.Fatalf("wdl on images: %v", err)
	}
	c = config.Default()
	c.Model, c.CNNBlocks = "cnn", 2
	c.Resolve()
	c.ImageSize, c.ImageChannels = 4, 1
	if _, _, _, err := c.BuildModels(table); err == nil || !strings.Contains(err.Error(), "reads images") {
		t.Fatalf("cnn on a table: %v", err)
	}
	b, _, wide, err := c.BuildModels(img)
	if err != nil || wide || b.CutDim() != 1*1*64 {
		t.Fatalf("cnn on 4×4 images: cut dim %v, wide %v, err %v; want 64, false, nil", b.CutDim(), wide, err)
	}
}

// writeLesions writes the ISIC-layout lesion PNGs of datatest.WriteLesionFolders.
func writeLesions(t *testing.T, dir string, nPos, nNeg, s int) {
	t.Helper()
	if err := datatest.WriteLesionFolders(dir, nPos, nNeg, s); err != nil {
		t.Fatal(err)
	}
}

// TestTrainISICEndToEnd runs generated lesion PNGs through LoadISIC and a
// tiny CNN, with every attack and every protection, and checks the run
// directory: the resolved config, a leak AUC for every attack at both
// passive blocks, and the summary.
func TestTrainISICEndToEnd(t *testing.T) {
	imgDir := t.TempDir()
	writeLesions(t, imgDir, 30, 270, 20)
	protections := []struct {
		name string
		edit func(*config.Config)
	}{
		{"none", func(*config.Config) {}},
		{"iso", func(c *config.Config) { c.Protect, c.Params = "iso", protect.Params{"iso_t": 1} }},
		{"max_norm", func(c *config.Config) { c.Protect = "max_norm" }},
		{"max_norm_label", func(c *config.Config) { c.Protect = "max_norm_label" }},
		{"marvell+dcor+dp", func(c *config.Config) {
			c.Protect, c.Params = "marvell", protect.Params{"marvell_s": 4, "dcor_alpha": 0.01, "label_dp_eps": 2}
		}},
	}
	for _, p := range protections {
		t.Run(p.name, func(t *testing.T) {
			c := config.Default()
			c.Data, c.Format, c.Model = imgDir, "isic", "cnn"
			c.ImageSize, c.CNNBlocks, c.CNNChannels, c.CNNDense, c.Cut = 16, 3, 4, 8, 2
			c.Batch, c.EvalEvery, c.MaxSteps, c.LR, c.ValFrac = 64, 2, 3, 1e-3, 0
			c.Attacks = []string{"all"}
			c.Out = t.TempDir()
			p.edit(&c)
			sum, err := Train(context.Background(), c, Options{})
			if err != nil {
				t.Fatal(err)
			}
			// 30 positives + 270 negatives → 300 kept, 60 held out.
			if sum.TrainRows != 240 || sum.TestRows != 60 || sum.Steps != 3 {
				t.Fatalf("train %d, test %d rows, %d steps; want 240, 60, 3", sum.TrainRows, sum.TestRows, sum.Steps)
			}
			raw, err := os.ReadFile(filepath.Join(c.Out, "config.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			var got config.Config
			if err := yaml.Unmarshal(raw, &got); err != nil {
				t.Fatal(err)
			}
			if got.TestFrac != 0.2 || got.ImageChannels != 3 || got.NegPerPos != 9 || got.CNNKernel != 3 || got.EvalBatch != 64 || len(got.Layers) != 0 {
				t.Fatalf("config.yaml not resolved for the CNN:\n%s", raw)
			}
			batches := readLines(t, filepath.Join(c.Out, "batches.jsonl"))
			if len(batches) != 3 {
				t.Fatalf("%d batches, want 3", len(batches))
			}
			// Every per-batch attack reports at both passive blocks.
			for _, name := range attack.Names() {
				if needs, _ := attack.Describe(name); needs.EpochMemory || needs.Model || needs.Expensive {
					continue // scored at the end of each epoch (epochs.jsonl) or at evaluations (eval.jsonl), or not in "all"
				}
				for _, layer := range []string{"first", "cut"} {
					k := name + "/" + layer
					if _, ok := batches[0]["leak"].(map[string]any)[k]; !ok {
						t.Errorf("batch 0 has no leak key %s (keys %v)", k, keys(batches[0]["leak"].(map[string]any)))
					}
				}
			}
			var s map[string]any
			raw, _ = os.ReadFile(filepath.Join(c.Out, "summary.json"))
			if err := json.Unmarshal(raw, &s); err != nil {
				t.Fatal(err)
			}
			if a, ok := s["test_auc_best"].(float64); !ok || a < 0 || a > 1 {
				t.Fatalf("summary test AUC %v", s["test_auc_best"])
			}
		})
	}
}

func keys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
