package sweep

import "testing"

// FuzzSweepSpec feeds arbitrary text to the sweep parser: an error, or
// runs (at most MaxRuns) whose names are valid directory names under the
// sweep directory.
func FuzzSweepSpec(f *testing.F) {
	f.Add([]byte("base: {epochs: 1}\nseeds: [1, 2]\ngrid:\n  - {protect: iso, iso_t: [1, 9]}\n  - {protect: none}\n"))
	f.Add([]byte("datasets:\n  - name: criteo\n    data: c.txt\ngrid: [{protect: [none, max_norm]}]\n"))
	f.Add([]byte("grid: [{protect: [.., .]}]\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := ParseSpec(b, "fuzz")
		if err != nil {
			return
		}
		runs, err := s.Expand()
		if err != nil {
			return
		}
		if len(runs) > MaxRuns {
			t.Fatalf("%d runs", len(runs))
		}
		for _, r := range runs {
			if err := CheckName(r.Name); err != nil {
				t.Fatalf("run name %q: %v", r.Name, err)
			}
		}
	})
}
