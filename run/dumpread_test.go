package run

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/sbinet/npyio"
)

// TestReadDumpRoundTrip reads back what a run dumped: as many batches as
// dumped, labels and IDs equal to the .npy files, every array batch×width.
func TestReadDumpRoundTrip(t *testing.T) {
	cfg := smallConfig(t)
	cfg.Epochs, cfg.Dump, cfg.DumpBatches = 1, filepath.Join(t.TempDir(), "dump"), 2
	if _, err := Train(context.Background(), cfg, Options{}); err != nil {
		t.Fatal(err)
	}
	index := readLines(t, filepath.Join(cfg.Dump, "index.jsonl"))
	k := 0
	err := ReadDump(cfg.Dump, func(b *DumpBatch) error {
		var labels []uint8
		readNPY(t, filepath.Join(cfg.Dump, index[k]["labels"].(string)), &labels)
		var ids []uint64
		readNPY(t, filepath.Join(cfg.Dump, index[k]["ids"].(string)), &ids)
		if b.Step != int64(index[k]["step"].(float64)) || !slices.Equal(b.Labels, labels) || !slices.Equal(b.IDs, ids) {
			t.Errorf("batch %d: step %d, labels/IDs differ from the files", k, b.Step)
		}
		for _, name := range DumpArrays {
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

func TestReadClassesNPY(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, v any) string {
		p := filepath.Join(dir, name)
		f, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := npyio.Write(f, v); err != nil {
			t.Fatal(err)
		}
		f.Close()
		return p
	}
	want := []uint8{3, 0, 9, 255}
	for name, v := range map[string]any{"u1": []uint8{3, 0, 9, 255}, "i8": []int64{3, 0, 9, 255}, "i4": []int32{3, 0, 9, 255}, "u2": []uint16{3, 0, 9, 255}} {
		got, err := ReadClassesNPY(write(name+".npy", v))
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("%s: %v, %v; want %v", name, got, err, want)
		}
	}
	for name, v := range map[string]any{"neg": []int64{1, -1}, "big": []int32{256}, "float": []float64{1, 2}} {
		if _, err := ReadClassesNPY(write(name+".npy", v)); err == nil {
			t.Errorf("%s accepted", name)
		}
	}
}
