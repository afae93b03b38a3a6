package netrun

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// FuzzParseCheckpoint feeds arbitrary bytes to the checkpoint parser: an
// error or sections, never a panic; a checkpoint written by store.save
// parses back to its sections.
func FuzzParseCheckpoint(f *testing.F) {
	dir := f.TempDir()
	st := store{dir: dir, role: "fuzz"}
	if err := st.save(3, bytesSection("a", []byte("alpha")), bytesSection("b", bytes.Repeat([]byte{7}, 3000))); err != nil {
		f.Fatal(err)
	}
	good, err := os.ReadFile(filepath.Join(dir, "fuzz-000000000003.ckpt"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good, int64(3))
	f.Add([]byte(checkpointMagicV1), int64(0))
	f.Fuzz(func(t *testing.T, b []byte, step int64) {
		secs, err := parseCheckpoint(b, step)
		if err != nil {
			return
		}
		var sections []ckSection
		for n, v := range secs {
			sections = append(sections, bytesSection(n, v))
		}
		var buf bytes.Buffer
		if err := writeCheckpoint(&buf, step, sections); err != nil {
			t.Fatal(err)
		}
		again, err := parseCheckpoint(buf.Bytes(), step)
		if err != nil || len(again) != len(secs) {
			t.Fatalf("a written checkpoint does not parse back: %v", err)
		}
		for n, v := range secs {
			if !bytes.Equal(again[n], v) {
				t.Fatalf("section %q changed in the round trip", n)
			}
		}
	})
}
