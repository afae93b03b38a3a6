package run

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	"github.com/splitguard/splitguard/dump"
)

// TestReadRoundTrip reads back what a run dumped: as many batches as
// dumped, labels and IDs equal to the .npy files, every array batch×width.
func TestReadRoundTrip(t *testing.T) {
	cfg := smallConfig(t)
	cfg.Epochs, cfg.Dump, cfg.DumpBatches = 1, filepath.Join(t.TempDir(), "dump"), 2
	if _, err := Train(context.Background(), cfg, Options{}); err != nil {
		t.Fatal(err)
	}
	index := readLines(t, filepath.Join(cfg.Dump, "index.jsonl"))
	k := 0
	err := dump.Read(cfg.Dump, func(b *dump.Batch) error {
		var labels []uint8
		readNPY(t, filepath.Join(cfg.Dump, index[k]["labels"].(string)), &labels)
		var ids []uint64
		readNPY(t, filepath.Join(cfg.Dump, index[k]["ids"].(string)), &ids)
		if b.Step != int64(index[k]["step"].(float64)) || !slices.Equal(b.Labels, labels) || !slices.Equal(b.IDs, ids) {
			t.Errorf("batch %d: step %d, labels/IDs differ from the files", k, b.Step)
		}
		for _, name := range dump.Arrays {
			if x := b.Arrays[name]; x == nil || x.Rows != cfg.Batch || x.Cols != cfg.Layers[k2layer(name, cfg.Cut)] {
				t.Errorf("batch %d: %s is %v", k, name, x)
			}
		}
		k++
		return nil
	})
	if err != nil || k != 2 {
		t.Fatalf("%d batches, err %v", k, err)
	}
}
