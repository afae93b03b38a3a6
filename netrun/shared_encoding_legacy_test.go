package netrun

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/splitguard/splitguard/config"
	"github.com/splitguard/splitguard/data"
)

// TestLegacyEncodingMismatchKeyed: a run directory of the legacy format
// whose recorded encoding differs from the scored file's (other hash
// buckets) refuses it, naming key hash_buckets as a config.KeyError; the
// same encoding is accepted, and a directory without the record says so
// without an error.
func TestLegacyEncodingMismatchKeyed(t *testing.T) {
	dir := t.TempDir()
	info := &data.Info{HashBuckets: 8, Columns: []data.ColumnInfo{{Name: "C1", Kind: data.KindCategorical, Cardinality: 8}}}
	if ok, err := checkEncoding(dir, info); ok || err != nil {
		t.Fatalf("no record: ok %v, %v; want false without error", ok, err)
	}
	write := func(text string) {
		if err := os.WriteFile(filepath.Join(dir, legacyEncodingFile), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(`{"hash_buckets": 8, "columns": [{"name": "C1", "kind": "categorical", "cardinality": 8}]}`)
	if ok, err := checkEncoding(dir, info); !ok || err != nil {
		t.Fatalf("the same encoding: ok %v, %v", ok, err)
	}
	write(`{"hash_buckets": 16, "columns": [{"name": "C1", "kind": "categorical", "cardinality": 16}]}`)
	_, err := checkEncoding(dir, info)
	if err == nil || !strings.Contains(err.Error(), "key hash_buckets") || !slices.Contains(config.KeysOf(err), "hash_buckets") {
		t.Fatalf("other hash buckets: %v (keys %v), want a refusal keyed hash_buckets", err, config.KeysOf(err))
	}
}
