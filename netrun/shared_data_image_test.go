package netrun

import (
	"context"
	"encoding/binary"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/splitguard/splitguard/config"
	"github.com/splitguard/splitguard/data/datatest"
	_ "github.com/splitguard/splitguard/data/images" // the image set readers
	"github.com/splitguard/splitguard/protect"
	"github.com/splitguard/splitguard/run"
	"github.com/splitguard/splitguard/rundir"
)

// writeLesionFolders writes the ISIC-layout lesion PNGs of datatest.WriteLesionFolders.
func writeLesionFolders(t *testing.T, dir string, nPos, nNeg, s int) {
	t.Helper()
	if err := datatest.WriteLesionFolders(dir, nPos, nNeg, s); err != nil {
		t.Fatal(err)
	}
}

// writeFashionIDX writes nTrain and nTest side×side Fashion-MNIST-format
// images (plain IDX files) labelled i%10, with a bright stripe whose row
// depends on the class.
func writeFashionIDX(t *testing.T, dir string, nTrain, nTest, side int) {
	t.Helper()
	idx := func(dims []int, body []byte) []byte {
		b := binary.BigEndian.AppendUint32(nil, 0x0800|uint32(len(dims)))
		for _, d := range dims {
			b = binary.BigEndian.AppendUint32(b, uint32(d))
		}
		return append(b, body...)
	}
	for _, part := range []struct {
		prefix string
		n      int
	}{{"train", nTrain}, {"t10k", nTest}} {
		img := make([]byte, part.n*side*side)
		lab := make([]byte, part.n)
		for i := range part.n {
			lab[i] = byte(i % 10)
			for p := range side * side {
				v := byte((i*7 + p*13) % 64)
				if p/side == int(lab[i])%side {
					v = 250
				}
				img[i*side*side+p] = v
			}
		}
		for name, b := range map[string][]byte{
			part.prefix + "-images-idx3-ubyte": idx([]int{part.n, side, side}, img),
			part.prefix + "-labels-idx1-ubyte": idx([]int{part.n}, lab),
		} {
			if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestNetworkedImagesMatchInProcess trains a tiny split CNN on generated
// ISIC lesions and Fashion-MNIST files in process and as two parties over
// mutual TLS on loopback (the passive holding the images without labels,
// the active only the labels), with checkpoints, and checks that every
// evaluation, every batch record and the summary agree bit for bit.
func TestNetworkedImagesMatchInProcess(t *testing.T) {
	certs := newTestPKI(t)
	for _, tc := range []struct {
		name string
		edit func(t *testing.T, c *config.Config)
	}{
		{"isic", func(t *testing.T, c *config.Config) {
			c.Data, c.Format = t.TempDir(), "isic"
			writeLesionFolders(t, c.Data, 20, 120, 20)
			c.ImageSize = 16
		}},
		{"fashion-mnist", func(t *testing.T, c *config.Config) {
			c.Data, c.Format = t.TempDir(), "fashion-mnist"
			writeFashionIDX(t, c.Data, 150, 60, 8)
			c.PositiveClass, c.ImageSize = 3, 8
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			base := config.Default()
			base.Model, base.Out = "cnn", filepath.Join(root, "inproc")
			base.CNNBlocks, base.CNNChannels, base.CNNDense, base.Cut = 2, 4, 8, 1
			base.Batch, base.Epochs, base.EvalEvery, base.LR, base.Seed = 16, 2, 3, 1e-3, 5
			base.Protect, base.Params = "marvell", protect.Params{"marvell_s": 2}
			base.Attacks = []string{"norm", "cosine"}
			tc.edit(t, &base)
			want, err := run.Train(context.Background(), base, run.Options{})
			if err != nil {
				t.Fatal(err)
			}
			act, pas := partyConfigs(base, root, certs)
			got := pair(t, act, pas)

			ge := readLines[rundir.EvalRecord](t, filepath.Join(act.Out, "eval.jsonl"))
			we := readLines[rundir.EvalRecord](t, filepath.Join(base.Out, "eval.jsonl"))
			if !reflect.DeepEqual(ge, we) || len(we) < 3 {
				t.Fatalf("evaluations differ:\n got %v\nwant %v", ge, we)
			}
			sameBatches(t, act.Out, base.Out, 6)
			if got.TestAUCBest != want.TestAUCBest || got.TestAUCFinal != want.TestAUCFinal || got.TestLossFinal != want.TestLossFinal ||
				got.ACEFinal != want.ACEFinal || got.TrainLossFinal != want.TrainLossFinal || got.Steps != want.Steps ||
				got.TrainRows != want.TrainRows || got.TestRows != want.TestRows || got.TrainPosRate != want.TrainPosRate {
				t.Fatalf("summaries differ:\n got %+v\nwant %+v", got, want)
			}
			if !sameLeaks(t, got.Leak, cutOnly(want.Leak)) || len(got.Leak) == 0 {
				t.Fatalf("leak summaries differ:\n got %v\nwant %v", got.Leak, cutOnly(want.Leak))
			}
			// The checkpoints were taken (every 5 steps) and the parties
			// wrote their models; neither has an encoding (images).
			for _, f := range []string{filepath.Join(act.Out, "top.model"), filepath.Join(pas.Out, "bottom.model"),
				filepath.Join(act.Out, "checkpoints"), filepath.Join(pas.Out, "checkpoints")} {
				if _, err := os.Stat(f); err != nil {
					t.Error(err)
				}
			}
			for _, d := range []string{act.Out, pas.Out} {
				if _, err := os.Stat(filepath.Join(d, rundir.EncodingFile)); !os.IsNotExist(err) {
					t.Errorf("%s: an encoding file for images (%v)", d, err)
				}
			}
			t.Logf("%s: test AUC %.6f in both modes; %d steps, %d train / %d test rows", tc.name, got.TestAUCFinal, got.Steps, got.TrainRows, got.TestRows)
		})
	}
}

// TestImageConfigChecks checks the networked checks of image runs: the
// cut width of the CNN, a digest that covers the image and CNN settings,
// and the refusals (--columns with images, serving a CNN).
func TestImageConfigChecks(t *testing.T) {
	c := Default()
	c.Data, c.Out, c.Addr, c.InsecureLoopback = "d", "o", "127.0.0.1:0", true
	c.Format, c.Model, c.CNNBlocks, c.CNNChannels, c.Cut, c.ImageSize = "isic", "cnn", 3, 5, 2, 20
	// 20 → 10 → 5 after two blocks: 5·5·5 values.
	if d := c.CutDim(); d != 125 {
		t.Errorf("CNN cut width %d, want 125", d)
	}
	if err := c.validate("active"); err != nil {
		t.Errorf("active: %v", err)
	}
	other := c
	other.NegPerPos = 4
	if reflect.DeepEqual(c.SharedDigest(), other.SharedDigest()) {
		t.Error("the digest ignores --neg-per-pos")
	}
	other = c
	other.CNNKernel = 5
	if reflect.DeepEqual(c.SharedDigest(), other.SharedDigest()) {
		t.Error("the digest ignores --cnn-kernel")
	}
	for _, tc := range []struct {
		role string
		edit func(*Config)
		want string
	}{
		{"passive", func(c *Config) { c.Columns = []string{"I1"} }, "(key columns) applies to tables"},
		{"active serve", func(*Config) {}, "is not served"},
		{"passive score", func(*Config) {}, "is not served"},
		{"active", func(c *Config) { c.Format = "criteo" }, "model cnn reads images"},
	} {
		bad := c
		tc.edit(&bad)
		if err := bad.validate(tc.role); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.role, err, tc.want)
		}
	}
}
