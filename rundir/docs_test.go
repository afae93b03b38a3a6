package rundir

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/splitguard/splitguard/metrics"
)

// TestRunDirectoryPageNamesEveryField checks that docs/RUN-DIRECTORY.md,
// the specification of the run directory's formats, names (in backticks)
// every JSON field of every record this package writes, so that a field
// added to a record cannot go undocumented.
func TestRunDirectoryPageNamesEveryField(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "docs", "RUN-DIRECTORY.md"))
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	for _, v := range []any{BatchRecord{}, EvalRecord{}, EpochRecord{}, Summary{}, BaselineSummary{},
		CheckpointFallback{}, BackdoorSummary{}, metrics.LeakSummary{}} {
		typ := reflect.TypeOf(v)
		names := jsonNames(typ)
		if len(names) == 0 {
			t.Errorf("%s has no JSON fields: has its encoding changed?", typ)
		}
		for _, name := range names {
			if !strings.Contains(page, "`"+name+"`") && !strings.Contains(page, `"`+name+`"`) {
				t.Errorf("docs/RUN-DIRECTORY.md does not name %s's field %q", typ.Name(), name)
			}
		}
	}
}

// jsonNames returns the JSON names of a struct's exported fields.
func jsonNames(typ reflect.Type) []string {
	var names []string
	for i := range typ.NumField() {
		f := typ.Field(i)
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch name {
		case "-":
			continue
		case "":
			name = f.Name
		}
		names = append(names, name)
	}
	return names
}
