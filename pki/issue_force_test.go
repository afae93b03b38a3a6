package pki

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

// TestIssueKeepsAnExistingKey: issuing a name twice is refused and leaves
// the key as it was (it used to overwrite it); Force replaces it.
func TestIssueKeepsAnExistingKey(t *testing.T) {
	dir := t.TempDir()
	if err := InitCA(dir, CAOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := Issue(dir, "passive", IssueOptions{}); err != nil {
		t.Fatal(err)
	}
	before, err := os.ReadFile(KeyFile(dir, "passive"))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := Issue(dir, "passive", IssueOptions{}); err == nil || !strings.Contains(err.Error(), "passive.key exists") {
		t.Fatalf("second issue: %v", err)
	}
	after, _ := os.ReadFile(KeyFile(dir, "passive"))
	if !bytes.Equal(before, after) {
		t.Fatal("the refused issue changed the key")
	}
	if _, _, err := Issue(dir, "passive", IssueOptions{Force: true}); err != nil {
		t.Fatal(err)
	}
	if after, _ = os.ReadFile(KeyFile(dir, "passive")); bytes.Equal(before, after) {
		t.Fatal("Force kept the old key")
	}
}
