package rundir

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/splitguard/splitguard/config"
)

// TestConfigDiffAdoptsWideDense checks that a run of 1,000 training rows,
// whose config.yaml holds wide_dense: standardised chosen from its data,
// is the same configuration as the command that left the key to the data
// (a restart resumes it), and another when the key is given otherwise.
func TestConfigDiffAdoptsWideDense(t *testing.T) {
	given := config.Default()
	given.Format, given.Data, given.Out = "csv", "t.csv", "first"
	old := given
	old.ResolveForData(1000)
	if old.WideDense != config.WideDenseStandardised {
		t.Fatalf("1,000 rows resolve wide_dense %q, want %s", old.WideDense, config.WideDenseStandardised)
	}
	b, err := config.Marshal(&old)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), ConfigFile)
	if err := os.WriteFile(path, append([]byte(old.YAMLHeader()), b...), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		wideDense string
		want      []string
	}{
		{"", nil},
		{config.WideDenseStandardised, nil},
		{config.WideDenseMinMax, []string{"wide_dense"}},
	} {
		cur := given
		cur.WideDense = tc.wideDense
		got, err := ConfigDiff(path, cur)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("wide_dense %q given: ConfigDiff %v, want %v", tc.wideDense, got, tc.want)
		}
	}
}
