package netrun

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDefaultCutAndCheckpointPruning runs both parties of a table run
// with the cut left at its zero value (the model's default), which once
// panicked indexing layer −1, with a checkpoint every 2 steps, and checks
// that each party keeps only its 2 newest checkpoints, the last step's
// among them.
func TestDefaultCutAndCheckpointPruning(t *testing.T) {
	if testing.Short() {
		t.Skip("two-party run")
	}
	root := t.TempDir()
	base := smallConfig(synthFile(t, 600), "")
	base.Cut, base.Layers = 0, []int{8, 8, 8, 8}
	base.Epochs, base.EvalEvery = 1, 0
	base.Protect, base.Params = "none", nil
	base.Attacks = []string{"norm"}
	act, pas := partyConfigs(base, root, newTestPKI(t))
	act.CheckpointEvery, pas.CheckpointEvery = 2, 2
	sum := pair(t, act, pas)
	if sum.Steps < 6 {
		t.Fatalf("%d steps, want at least 6 to prune", sum.Steps)
	}
	for _, c := range []Config{act, pas} {
		dir := filepath.Join(c.Out, "checkpoints")
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, e := range entries {
			if strings.HasSuffix(e.Name(), ".ckpt") { // not active.acked
				names = append(names, e.Name())
			}
		}
		if len(names) != 2 {
			t.Errorf("%s holds %v, want the 2 newest checkpoints", dir, names)
		}
	}
	yaml, err := os.ReadFile(filepath.Join(act.Out, "config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(yaml), "cut: 3\n") {
		t.Errorf("config.yaml does not hold the resolved cut:\n%s", yaml)
	}
}

func TestKeepCheckpointsValidated(t *testing.T) {
	c := Default()
	c.Data, c.Out, c.Addr, c.InsecureLoopback = "x", "y", "127.0.0.1:1", true
	c.KeepCheckpoints = 1
	if err := c.validate("active"); err == nil || !strings.Contains(err.Error(), "keep 1 checkpoints (key keep_checkpoints), want at least 2") {
		t.Errorf("keep 1: error %v", err)
	}
	c.KeepCheckpoints = 2
	if err := c.validate("active"); err != nil {
		t.Errorf("keep 2: %v", err)
	}
}

// TestPruneKeepsTheNewestGood checks that pruning never deletes the
// checkpoint just written and deletes nothing when it does not read back.
func TestPruneKeepsTheNewestGood(t *testing.T) {
	s := store{dir: t.TempDir(), role: "active", keep: 2}
	for _, step := range []int64{1, 2, 3, 4} {
		if err := s.save(step, bytesSection("m", []byte("x"))); err != nil {
			t.Fatal(err)
		}
	}
	if got, _ := s.steps(); len(got) != 2 || got[0] != 3 || got[1] != 4 {
		t.Fatalf("kept %v, want [3 4]", got)
	}
	// A corrupt newest checkpoint: nothing is pruned.
	if err := os.WriteFile(s.path(5), []byte("garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := s.prune(5); err == nil {
		t.Error("pruning after a corrupt checkpoint succeeded")
	}
	if got, _ := s.steps(); len(got) != 3 {
		t.Errorf("after a corrupt newest checkpoint kept %v, want [3 4 5]", got)
	}
}

// TestCheckpointZeroRuns round-trips sections through the v3 format
// (chunks with runs of zero bytes packed) and checks that a v1 file
// (sections stored as they are) and a v2 file (each section packed whole)
// still load, and that a section of untouched embedding rows packs
// to about a quarter of its size.
func TestCheckpointZeroRuns(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	random := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.UintN(255) + 1)
		}
		return b
	}
	// Rows laid out as nn.Embedding stores them (dimension 4): 4 weights,
	// 8 zero moments, the unused slot (all ones), 3 zero floats.
	rows := make([]byte, 0, 1000*64)
	for range 1000 {
		rows = append(rows, random(16)...)
		rows = append(rows, make([]byte, 32)...)
		rows = append(rows, 0xff, 0xff, 0xff, 0xff)
		rows = append(rows, make([]byte, 12)...)
	}
	sections := map[string][]byte{
		"empty": {}, "zeros": make([]byte, 1000), "random": random(777), "rows": rows,
		"short runs": {0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 2, 0}, "trailing": append(random(9), make([]byte, 20)...),
	}
	s := store{dir: t.TempDir(), role: "passive"}
	var secs []ckSection
	for n, v := range sections {
		secs = append(secs, bytesSection(n, v))
	}
	if err := s.save(7, secs...); err != nil {
		t.Fatal(err)
	}
	got, err := s.load(7)
	if err != nil {
		t.Fatal(err)
	}
	for n, want := range sections {
		if !bytes.Equal(got[n], want) {
			t.Errorf("section %q: read back %d bytes differing from the %d written", n, len(got[n]), len(want))
		}
	}
	fi, err := os.Stat(s.path(7))
	if err != nil {
		t.Fatal(err)
	}
	if raw := 1000 + 777 + len(rows) + 13 + 29; fi.Size() > int64(raw)/2 {
		t.Errorf("checkpoint of %d bytes for %d bytes of sections", fi.Size(), raw)
	}
	if p := packZeros(nil, rows); len(p) > len(rows)*3/8 {
		t.Errorf("untouched rows pack to %d of %d bytes", len(p), len(rows))
	}
	// A v1 file: the same layout without packing.
	b := []byte(checkpointMagicV1)
	b = binary.LittleEndian.AppendUint64(b, 9)
	b = binary.LittleEndian.AppendUint32(b, 1)
	b = binary.LittleEndian.AppendUint32(b, 1)
	b = append(b, 'm')
	b = binary.LittleEndian.AppendUint64(b, 3)
	b = append(b, 1, 0, 2)
	sum := sha256.Sum256(b)
	if err := os.WriteFile(s.path(9), append(b, sum[:]...), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := s.load(9); err != nil || !bytes.Equal(got["m"], []byte{1, 0, 2}) {
		t.Errorf("v1 checkpoint: %v %v", got, err)
	}
	// A v2 file: each section packed whole.
	b = []byte(checkpointMagicV2)
	b = binary.LittleEndian.AppendUint64(b, 11)
	b = binary.LittleEndian.AppendUint32(b, 1)
	b = binary.LittleEndian.AppendUint32(b, 1)
	b = append(b, 'z')
	b = binary.LittleEndian.AppendUint64(b, uint64(len(rows)))
	packed := packZeros(nil, rows)
	b = binary.LittleEndian.AppendUint64(b, uint64(len(packed)))
	b = append(b, packed...)
	sum = sha256.Sum256(b)
	if err := os.WriteFile(s.path(11), append(b, sum[:]...), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := s.load(11); err != nil || !bytes.Equal(got["z"], rows) {
		t.Errorf("v2 checkpoint: %v", err)
	}
	for _, bad := range [][]byte{{5}, {0, 200}, {1}} {
		if _, err := unpackZeros(bad, 3); err == nil {
			t.Errorf("unpackZeros(%v) accepted", bad)
		}
	}
}
