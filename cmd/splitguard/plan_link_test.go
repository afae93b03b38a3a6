package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"
)

// TestPlanLinkJSON runs plan-link on a tiny MLP and recomputes every
// prediction from the printed costs with the formula of
// docs/methods/wan.md, written out here: with P = Q·C_p + R (the
// recompute R only when k > 0) and A = Q·C_a, per exchange
// max(P, A, B_f/W_up, B_b/W_down, round/(k+1)) with round =
// P + A + o + RTT + B_f/W_up + B_b/W_down, per update that over Q.
func TestPlanLinkJSON(t *testing.T) {
	cmd := newRootCmd()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetArgs([]string{"plan-link", "--model", "mlp", "--layers", "16,16", "--cut", "1", "--batch", "8",
		"--rtt", "10ms", "--up", "8", "--down", "4", "--encodings", "f32,int8", "--plan-staleness", "0,1", "--plan-local-steps", "1,2",
		"--steps", "3", "--warmup", "1", "--active-ms", "2.5", "--json"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Measured []struct {
			Encoding                                     string
			PassiveMS, ActiveMS, RecomputeMS, OverheadMS float64
			Forward, Backward                            float64
		}
		Predicted []struct {
			Encoding              string
			Staleness, LocalSteps int
			MSExchange, MSUpdate  float64
		}
	}
	// encoding/json matches the fields case-insensitively; the snake-case
	// keys need their names.
	raw := strings.NewReplacer(`"passive_ms"`, `"PassiveMS"`, `"active_ms"`, `"ActiveMS"`, `"overhead_ms"`, `"OverheadMS"`, `"recompute_ms"`, `"RecomputeMS"`,
		`"bytes_forward"`, `"Forward"`, `"bytes_backward"`, `"Backward"`, `"local_steps"`, `"LocalSteps"`,
		`"ms_per_exchange"`, `"MSExchange"`, `"ms_per_update"`, `"MSUpdate"`).Replace(out.String())
	if err := json.Unmarshal([]byte(raw), &got); err != nil {
		t.Fatalf("%v in %s", err, out.String())
	}
	if len(got.Measured) != 2 || len(got.Predicted) != 8 {
		t.Fatalf("%d measured, %d predicted rows; want 2 and 8:\n%s", len(got.Measured), len(got.Predicted), out.String())
	}
	if got.Measured[0].ActiveMS != 2.5 || got.Measured[1].ActiveMS != 2.5 {
		t.Errorf("--active-ms 2.5 gave active compute %v, %v", got.Measured[0].ActiveMS, got.Measured[1].ActiveMS)
	}
	const rtt, up, down = 10.0, 8e6 / 8 / 1e3, 4e6 / 8 / 1e3 // ms; bytes per ms
	for _, p := range got.Predicted {
		var m = got.Measured[0]
		if p.Encoding == "int8" {
			m = got.Measured[1]
		}
		q, k := float64(p.LocalSteps), float64(p.Staleness)
		tu, td := m.Forward/up, m.Backward/down
		pas, act := q*m.PassiveMS, q*m.ActiveMS
		if k > 0 {
			pas += m.RecomputeMS
		}
		round := pas + act + m.OverheadMS + rtt + tu + td
		want := max(pas, act, tu, td, round/(k+1))
		if math.Abs(p.MSExchange-want) > 1e-5 || math.Abs(p.MSUpdate-want/q) > 1e-5 {
			t.Errorf("%s k=%d Q=%d: %.6f ms/exchange, %.6f ms/update; the formula gives %.6f, %.6f", p.Encoding, p.Staleness, p.LocalSteps, p.MSExchange, p.MSUpdate, want, want/q)
		}
	}
}

// TestPlanLinkCheckEveryOption runs plan-link --check on a tiny MLP over
// a short emulated link and checks that every planned option (2
// encodings × 2 staleness values × 2 local-step counts) was run and has
// a measured step beside its prediction, in the order planned, and that
// a synchronous step over a 4 ms round trip took at least that round
// trip.
func TestPlanLinkCheckEveryOption(t *testing.T) {
	if testing.Short() {
		t.Skip("runs 8 short two-party runs over an emulated link")
	}
	cmd := newRootCmd()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetArgs([]string{"plan-link", "--model", "mlp", "--layers", "16,16", "--cut", "1", "--batch", "8",
		"--rtt", "4ms", "--up", "0", "--down", "0", "--encodings", "f32,int8", "--plan-staleness", "0,2", "--plan-local-steps", "1,2",
		"--steps", "4", "--warmup", "1", "--check", "--json"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Check []struct {
			Encoding              string
			Staleness, LocalSteps int
			Predicted, Measured   float64
		}
	}
	raw := strings.NewReplacer(`"local_steps"`, `"LocalSteps"`, `"predicted_ms"`, `"Predicted"`, `"measured_ms"`, `"Measured"`).Replace(out.String())
	if err := json.Unmarshal([]byte(raw), &got); err != nil {
		t.Fatalf("%v in %s", err, out.String())
	}
	var want []string
	for _, e := range []string{"f32", "int8"} {
		for _, k := range []int{0, 2} {
			for _, q := range []int{1, 2} {
				want = append(want, fmt.Sprintf("%s k=%d Q=%d", e, k, q))
			}
		}
	}
	if len(got.Check) != len(want) {
		t.Fatalf("%d checked options, want %d:\n%s", len(got.Check), len(want), out.String())
	}
	for i, c := range got.Check {
		if name := fmt.Sprintf("%s k=%d Q=%d", c.Encoding, c.Staleness, c.LocalSteps); name != want[i] {
			t.Errorf("check row %d is %s, want %s", i, name, want[i])
		}
		if c.Predicted <= 0 || c.Measured <= 0 {
			t.Errorf("%s: predicted %v ms, measured %v ms; want both positive", want[i], c.Predicted, c.Measured)
		}
		if c.Staleness == 0 && c.Measured < 4 {
			t.Errorf("%s: a synchronous step of %v ms over a 4 ms round trip", want[i], c.Measured)
		}
	}
}

// TestPlanLinkRefuses checks that bad flags are errors naming the flag.
func TestPlanLinkRefuses(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--plan-staleness", "-1"}, "--plan-staleness -1"},
		{[]string{"--plan-local-steps", "0"}, "--plan-local-steps 0"},
		{[]string{"--encodings", "fp8"}, `--encodings: unknown wire encoding "fp8"`},
		{[]string{"--rtt", "-1ms"}, "--rtt"},
		{[]string{"--steps", "0"}, "--steps 0"},
		{[]string{"--passive-ms", "-2"}, "--passive-ms -2"},
		{[]string{"--active-ms", "3", "--check"}, "--check measures this machine's compute"},
	} {
		cmd := newRootCmd()
		cmd.SetOut(&bytes.Buffer{})
		cmd.SetErr(&bytes.Buffer{})
		cmd.SetArgs(append([]string{"plan-link", "--model", "mlp", "--layers", "16,16", "--cut", "1", "--batch", "8"}, tc.args...))
		if err := cmd.Execute(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want an error containing %q", tc.args, err, tc.want)
		}
	}
}
