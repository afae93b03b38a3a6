package rundir

import (
	"errors"
	"slices"
	"testing"

	"github.com/splitguard/splitguard/audit"
)

// TestNewPartyAudits names each view by its members and gives each an
// auditor of its own; an auditor that cannot be built is the error.
func TestNewPartyAudits(t *testing.T) {
	built := 0
	newAud := func() (*audit.Auditor, error) { built++; return audit.New([]string{"norm"}, true, 1) }
	got, err := NewPartyAudits([]string{"a", "b", "c"}, [][]int{{0}, {2}, {0, 2}, {0, 1, 2}}, newAud)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		name    string
		members []string
	}{{"a", []string{"a"}}, {"c", []string{"c"}}, {"a+c", []string{"a", "c"}}, {"a+b+c", []string{"a", "b", "c"}}}
	if len(got) != len(want) || built != len(want) {
		t.Fatalf("%d audits from %d auditors, want %d", len(got), built, len(want))
	}
	for i, w := range want {
		if got[i].Name != w.name || !slices.Equal(got[i].Members, w.members) || got[i].Auditor == nil {
			t.Errorf("view %d: %q %v, want %q %v", i, got[i].Name, got[i].Members, w.name, w.members)
		}
		if i > 0 && got[i].Auditor == got[i-1].Auditor {
			t.Errorf("views %d and %d share an auditor", i-1, i)
		}
	}
	boom := errors.New("boom")
	if _, err := NewPartyAudits([]string{"a"}, [][]int{{0}}, func() (*audit.Auditor, error) { return nil, boom }); !errors.Is(err, boom) {
		t.Errorf("error %v, want boom", err)
	}
}
