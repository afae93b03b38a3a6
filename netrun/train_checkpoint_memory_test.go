package netrun

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"

	"github.com/splitguard/splitguard/data"
)

// procKB reads a "Name:   N kB" line of /proc/self/status.
func procKB(t *testing.T, name string) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skip("no /proc/self/status")
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, name+":"); ok {
			n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatalf("%s not in /proc/self/status", name)
	return 0
}

// resetPeak resets the process's peak RSS (VmHWM) to its current RSS.
func resetPeak(t *testing.T) {
	t.Helper()
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		t.Skipf("cannot reset the peak RSS: %v", err)
	}
}

// TestCheckpointSaveMemory measures the peak RSS while a party with a
// Wide&Deep bottom of 2^20 hash buckets per column (embedding width 2:
// about 650 MB of parameters and Adam moments) saves its checkpoint,
// against the RSS before the save: at most 1.2× (the save streams to the
// file). With SPLITGUARD_SAVE_COMPARE=1 the old way (serialise into a
// buffer, then copy into one more) is measured too and logged.
func TestCheckpointSaveMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates a model of 650 MB")
	}
	root := t.TempDir()
	cfg := Default()
	cfg.Config = smallConfig(synthFile(t, 200), root)
	cfg.HashBuckets, cfg.EmbedDim = 1<<20, 2
	split, err := data.Load(cfg.Data, cfg.DataOptions())
	if err != nil {
		t.Fatal(err)
	}
	bottom, err := newBottom(&cfg, split.Train.X)
	if err != nil {
		t.Fatal(err)
	}
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	st := store{dir: filepath.Join(root, "ckpt"), role: "passive"}
	measure := func(save func() error) (steady, peak int64) {
		runtime.GC()
		debug.FreeOSMemory()
		steady = procKB(t, "VmRSS")
		resetPeak(t)
		if err := save(); err != nil {
			t.Fatal(err)
		}
		return steady, procKB(t, "VmHWM")
	}
	steady, peak := measure(func() error { return st.save(5, ckSection{"passive", bottom.Save}) })
	ratio := float64(peak) / float64(steady)
	t.Logf("streamed save: steady RSS %d MB, peak %d MB during the save: %.3f×", steady>>10, peak>>10, ratio)
	if ratio > 1.2 {
		t.Errorf("peak RSS during the save is %.2f× the steady state, want ≤ 1.2×", ratio)
	}
	if os.Getenv("SPLITGUARD_SAVE_COMPARE") != "1" {
		return
	}
	oldSteady, oldPeak := measure(func() error {
		var buf bytes.Buffer
		if err := bottom.Save(&buf); err != nil {
			return err
		}
		b := []byte(checkpointMagicV1)
		b = binary.LittleEndian.AppendUint64(b, 6)
		b = append(b, buf.Bytes()...)
		return os.WriteFile(filepath.Join(root, "old.ckpt"), b, 0o600)
	})
	t.Logf("buffered save (before): steady RSS %d MB, peak %d MB: %.3f×", oldSteady>>10, oldPeak>>10, float64(oldPeak)/float64(oldSteady))
}
