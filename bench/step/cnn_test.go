package step

import (
	"bytes"
	"math"
	"runtime"
	"testing"

	"github.com/splitguard/splitguard/model"
	"github.com/splitguard/splitguard/tensor"
)

// tinyCNN is 12×12×2 images, 3 blocks of 4 filters (12→6→3→1), the cut
// after block 2 (3×3×4 = 36), a Dense layer of 5.
func tinyCNN() model.CNNConfig {
	return model.CNNConfig{Height: 12, Width: 12, Channels: 2, Blocks: 3, Filters: 4, Kernel: 3, Dense: 5, Cut: 2, LR: 1e-2, Seed: 3}
}

func TestCNNSmall(t *testing.T) {
	sb, err := NewCNN(tinyCNN(), 8)
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		l, err := sb.Step()
		if err != nil {
			t.Fatal(err)
		}
		if math.IsNaN(l) || l <= 0 {
			t.Fatalf("loss %v", l)
		}
	}
	// FLOPs of the tiny model by hand: blocks at 12², 6², 3² pixels with
	// 9·2, 9·4, 9·4 inputs per filter; the first has no input gradient;
	// then Dense 4→5 and 5→1 (+1 for the logit's input counted as in FLOPs).
	want := 2*2*8*144*18*4.0 + 3*2*8*36*36*4.0 + 3*2*8*9*36*4.0 + 3*2*8*5*5.0
	if got := sb.FLOPs(); got != want {
		t.Fatalf("FLOPs = %v, want %v", got, want)
	}
}

// BenchmarkCNNStep is one full split step of the ISIC CNN (METHODS §6) at
// batch 128: 6 blocks of 64 3×3 filters on 84×84×3, cut after block 4.
func BenchmarkCNNStep(b *testing.B) {
	sb, err := NewCNN(model.CNNConfig{}, DefaultCNNBatch)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := sb.Step(); err != nil { // warm up: grow buffers
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := sb.Step(); err != nil {
			b.Fatal(err)
		}
	}
	s := b.Elapsed().Seconds()
	b.ReportMetric(float64(sb.Batch)*float64(b.N)/s, "examples/s")
	b.ReportMetric(sb.FLOPs()*float64(b.N)/s/1e9, "GFLOP/s")
	b.Logf("engine %s", tensor.Default.Name())
}

// TestCNNStepSameAtAnyCoreCount trains a CNN large enough that its
// pooling, patches and products are cut into parts at GOMAXPROCS 1, 2, 8
// and 16 and compares the losses and both parties' saved models bit for
// bit.
func TestCNNStepSameAtAnyCoreCount(t *testing.T) {
	cfg := model.CNNConfig{Height: 24, Width: 24, Channels: 3, Blocks: 3, Filters: 8, Kernel: 3, Dense: 8, Cut: 2, LR: 1e-2, Seed: 5}
	batch, steps := 32, 2
	var refLoss []float64
	var refModels []byte
	for _, procs := range []int{1, 2, 8, 16} {
		old := runtime.GOMAXPROCS(procs)
		sb, err := NewCNN(cfg, batch)
		if err != nil {
			runtime.GOMAXPROCS(old)
			t.Fatal(err)
		}
		var loss []float64
		for range steps {
			l, err := sb.Step()
			if err != nil {
				runtime.GOMAXPROCS(old)
				t.Fatal(err)
			}
			loss = append(loss, l)
		}
		runtime.GOMAXPROCS(old)
		var models bytes.Buffer
		if err := sb.Bottom.Save(&models); err != nil {
			t.Fatal(err)
		}
		if err := sb.Top.Save(&models); err != nil {
			t.Fatal(err)
		}
		if refLoss == nil {
			refLoss, refModels = loss, models.Bytes()
			continue
		}
		for i := range loss {
			if math.Float64bits(loss[i]) != math.Float64bits(refLoss[i]) {
				t.Fatalf("GOMAXPROCS %d: loss of step %d is %v, at 1 core %v", procs, i, loss[i], refLoss[i])
			}
		}
		if !bytes.Equal(models.Bytes(), refModels) {
			t.Fatalf("GOMAXPROCS %d: the saved models differ from those trained on one core", procs)
		}
	}
}
