package passive

import (
	"os/exec"
	"strings"
	"testing"
)

// TestNoPathToLabels checks, on the import graph, that nothing the passive
// party's code can reach holds labels: no package of the active party, the
// protections (which take labels), the audit or the simulation.
func TestNoPathToLabels(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Skipf("go list unavailable: %v", err)
	}
	forbidden := []string{"/party/active", "/protect", "/audit", "/run"}
	for _, dep := range strings.Fields(string(out)) {
		if !strings.HasPrefix(dep, "github.com/splitguard/splitguard/") {
			continue
		}
		for _, f := range forbidden {
			if strings.HasSuffix(dep, f) || strings.Contains(dep, f+"/") {
				t.Errorf("party/passive depends on %s, which handles labels", dep)
			}
		}
	}
}
