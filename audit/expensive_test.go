package audit

import (
	"testing"
)

// TestSampleExpensive: with the expensive attacks sampled every 3 batches,
// exactly the steps 0, 3, 6 carry ExPLoit's and its tuned twin's leak,
// ExPLoit's figures there equal those of an auditor scoring every batch
// (it is batch-only), the cheap attacks (norm and its tuned twin) score
// every batch with the same figures, and the summaries count 3 and 8
// batches.
func TestSampleExpensive(t *testing.T) {
	const steps, every = 8, 3
	run := func(every int) []map[string]float64 {
		a, err := New([]string{"norm", "exploit"}, true, 5)
		if err != nil {
			t.Fatal(err)
		}
		if err := a.Tune(16, 2); err != nil {
			t.Fatal(err)
		}
		if err := a.SampleExpensive(every); err != nil {
			t.Fatal(err)
		}
		var out []map[string]float64
		for step := range int64(steps) {
			res, err := a.Observe(tunedBatch(step))
			if err != nil {
				t.Fatal(err)
			}
			m := map[string]float64{}
			for k, v := range res {
				if v == nil {
					t.Fatalf("step %d: %s undefined", step, k)
				}
				m[k] = *v
			}
			out = append(out, m)
		}
		sum := a.Summary()
		for key, want := range map[string]int{"norm/cut": steps, "norm_tuned/cut": steps,
			"exploit/cut": (steps + every - 1) / max(every, 1), "exploit_tuned/cut": (steps + every - 1) / max(every, 1)} {
			if got := sum[key].Batches; got != want {
				t.Errorf("every %d: %s summarises %d batches, want %d", every, key, got, want)
			}
		}
		return out
	}
	all, sampled := run(1), run(every)
	for step := range steps {
		scored := step%every == 0
		for _, key := range []string{"exploit/cut", "exploit_tuned/cut"} {
			if _, ok := sampled[step][key]; ok != scored {
				t.Errorf("step %d: %s present %v, want %v", step, key, ok, scored)
			}
		}
		for _, key := range []string{"norm/cut", "norm_tuned/cut", "exploit/cut"} {
			got, ok := sampled[step][key]
			if want := all[step][key]; (ok || key != "exploit/cut") && got != want {
				t.Errorf("step %d: %s %v sampled, %v scoring every batch", step, key, got, want)
			}
		}
	}
	// The tuned twin has the same history up to its first scored batch.
	if got, want := sampled[0]["exploit_tuned/cut"], all[0]["exploit_tuned/cut"]; got != want {
		t.Errorf("step 0: exploit_tuned/cut %v sampled, %v every batch", got, want)
	}
	a, _ := New([]string{"norm"}, true, 5)
	if err := a.SampleExpensive(-1); err == nil {
		t.Error("SampleExpensive(-1) accepted")
	}
}
