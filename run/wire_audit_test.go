package run

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/splitguard/splitguard/dump"
	"github.com/splitguard/splitguard/transport/wire"
)

// TestAuditSeesWhatWasSent dumps the batches the audit attacked (key
// dump: the cut-layer gradient and embedding each attack was given) in a
// run with bf16 embeddings and int8 gradients with error feedback, and
// checks that every dumped gradient is a tensor of int8 values (the wire
// packing, which refuses anything else, accepts it) and every embedding
// one of bf16 values: the audit measures the leak of what crossed the
// wire, not of the values before rounding. The same check fails on an
// f32 run's gradients, so it can tell the two apart. (The two-process
// run gives the same batch records: netrun's
// TestEncodedNetworkedMatchesInProcess.)
func TestAuditSeesWhatWasSent(t *testing.T) {
	for _, tc := range []struct {
		name               string
		emb, grad          string
		feedback, wantWire bool
	}{
		{"bf16/int8+ef", "bf16", "int8", true, true},
		{"f32", "f32", "f32", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := smallConfig(t)
			cfg.SynthRows, cfg.Epochs, cfg.Attacks = 3000, 2, []string{"norm"}
			cfg.WireEmbedding, cfg.WireGradient, cfg.WireFeedback = tc.emb, tc.grad, tc.feedback
			cfg.Dump, cfg.DumpBatches = filepath.Join(t.TempDir(), "dump"), 3
			if _, err := Train(context.Background(), cfg, Options{}); err != nil {
				t.Fatal(err)
			}
			n := 0
			err := dump.Read(cfg.Dump, func(b *dump.Batch) error {
				n++
				_, gErr := wire.Int8.Pack(nil, b.Arrays["cut_grad"])
				_, eErr := wire.BF16.Pack(nil, b.Arrays["cut_embedding"])
				if tc.wantWire && (gErr != nil || eErr != nil) {
					t.Errorf("step %d: the audit's gradient is not int8 (%v) or its embedding not bf16 (%v)", b.Step, gErr, eErr)
				}
				if !tc.wantWire && gErr == nil {
					t.Errorf("step %d: an f32 gradient packs as int8: the check cannot tell rounded from unrounded", b.Step)
				}
				return nil
			})
			if err != nil || n != 3 {
				t.Fatalf("%d dumped batches, err %v", n, err)
			}
		})
	}
}
