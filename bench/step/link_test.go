package step

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/splitguard/splitguard/config"
	"github.com/splitguard/splitguard/transport/wire"
)

// TestMeasureLink measures a small MLP step in f32 and int8: every cost
// is positive, and the int8 gradient message is the size worked out by
// hand — per row a 4-byte scale and one byte per value (8 rows × (4+16)
// = 160 bytes of values), plus its framing — which is the f32 message's
// framing plus 8 × 16 × 4 = 512 bytes of values (the gradient has no +0,
// so f32 packs it dense).
func TestMeasureLink(t *testing.T) {
	cfg := config.Default()
	cfg.Model, cfg.Layers, cfg.Cut, cfg.Batch, cfg.SynthRows, cfg.Out = "mlp", []int{16, 16}, 1, 8, 200, "unused"
	cfg.Baseline, cfg.EvalEvery, cfg.EarlyStop, cfg.ValFrac = false, 0, 0, 0
	cfg.Resolve()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	f32, i8 := wire.Encodings{}, wire.Encodings{Embedding: wire.Int8, Gradient: wire.Int8}
	procs := runtime.GOMAXPROCS(0)
	got, err := MeasureLink(context.Background(), LinkSpec{Config: &cfg, Encodings: []wire.Encodings{f32, i8}, Steps: 3, Warmup: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Wire != f32 || got[1].Wire != i8 {
		t.Fatalf("measured %+v, want f32 then int8", got)
	}
	for _, g := range got {
		c := g.Costs
		if c.Passive <= 0 || c.Active <= 0 || c.Overhead <= 0 || c.Forward <= 0 || c.Backward <= 0 {
			t.Errorf("%v: a cost is not positive: %+v", g.Wire, c)
		}
		// (A forward of this tiny bottom takes a few microseconds, which
		// getrusage's microseconds may round to none.)
		if _, ok := processCPU(); ok && (c.CPU.Passive <= 0 || c.CPU.Active <= 0 || c.CPU.Recompute < 0 || c.CPU.Transport <= 0) {
			t.Errorf("%v: a processor time is not positive: %+v", g.Wire, c.CPU)
		}
		t.Logf("%v: %+v", g.Wire.Embedding, c)
	}
	if n := runtime.GOMAXPROCS(0); n != procs {
		t.Errorf("GOMAXPROCS %d after measuring, %d before", n, procs)
	}
	// The tensor field's length prefix is one byte in both (160 and 512
	// bytes both need a 2-byte varint); the int8 tensor has no other
	// field the f32 one lacks but its encoding number (2 bytes).
	if d := got[0].Costs.Backward - got[1].Costs.Backward; d != 512-160-2 {
		t.Errorf("f32 gradient message %d bytes, int8 %d: difference %d, want 512 − 160 − 2 = 350", got[0].Costs.Backward, got[1].Costs.Backward, d)
	}
}

// TestProcessCPU checks that processCPU counts processor time, not wall
// time: a sleep of 100 ms costs almost none, and a loop that runs until
// 30 ms of processor time have passed takes at least 30 ms of wall time
// less what other threads of the process ran meanwhile on other cores
// (the runtime's, and internal/par's workers that an earlier test left
// spinning for up to 300 µs): 25 ms at least.
func TestProcessCPU(t *testing.T) {
	if _, ok := processCPU(); !ok {
		t.Skip("no processor time on this system")
	}
	c0 := cpuNow()
	time.Sleep(100 * time.Millisecond)
	if d := cpuNow() - c0; d > 20*time.Millisecond || d < 0 {
		t.Errorf("a 100 ms sleep took %v of processor time, want under 20 ms", d)
	}
	start, c0 := time.Now(), cpuNow()
	x := 1.0
	for cpuNow()-c0 < 30*time.Millisecond {
		for range 1000 {
			x = x*1.0000001 + 1e-9
		}
	}
	if w := time.Since(start); w < 25*time.Millisecond {
		t.Errorf("30 ms of processor time in %v of wall time on one goroutine (%g)", w, x)
	}
}

// TestMeasureLinkCompressed measures a step in int4 with and without
// zstd: the same run, so the compressed embeddings' message (ReLU
// activations, many zero codes) is smaller, and the gradient's no larger
// (a tensor that does not compress is sent as packed).
func TestMeasureLinkCompressed(t *testing.T) {
	cfg := config.Default()
	cfg.Model, cfg.Layers, cfg.Cut, cfg.Batch, cfg.SynthRows, cfg.Out = "mlp", []int{64, 64}, 1, 128, 1000, "unused"
	cfg.Baseline, cfg.EvalEvery, cfg.EarlyStop, cfg.ValFrac = false, 0, 0, 0
	cfg.Resolve()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	plain := wire.Encodings{Embedding: wire.Int4, Gradient: wire.Int4}
	z := plain
	z.Compression = wire.Zstd
	got, err := MeasureLink(context.Background(), LinkSpec{Config: &cfg, Encodings: []wire.Encodings{plain, z}, Steps: 3, Warmup: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Wire != plain || got[1].Wire != z {
		t.Fatalf("measured %+v, want int4 then int4 with zstd", got)
	}
	p, c := got[0].Costs, got[1].Costs
	if c.Forward >= p.Forward || c.Backward > p.Backward {
		t.Errorf("bytes with zstd %d → and %d ←, without %d and %d", c.Forward, c.Backward, p.Forward, p.Backward)
	}
	t.Logf("int4 %d/%d bytes, with zstd %d/%d", p.Forward, p.Backward, c.Forward, c.Backward)
}
