package main

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"
)

// TestPlanLinkJSON runs plan-link on a tiny MLP and recomputes every
// prediction from the printed costs with the formula of
// docs/methods/wan.md, written out here: per exchange
// max(Q·C_p, Q·C_a, B_f/W_up, B_b/W_down, round/(k+1)) with round =
// Q·C_p + C_a + o + RTT + B_f/W_up + B_b/W_down, per update that over Q.
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
			Encoding                        string
			PassiveMS, ActiveMS, OverheadMS float64
			Forward, Backward               float64
		}
		Predicted []struct {
			Encoding              string
			Staleness, LocalSteps int
			MSExchange, MSUpdate  float64
		}
	}
	// encoding/json matches the fields case-insensitively; the snake-case
	// keys need their names.
	raw := strings.NewReplacer(`"passive_ms"`, `"PassiveMS"`, `"active_ms"`, `"ActiveMS"`, `"overhead_ms"`, `"OverheadMS"`,
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
		round := q*m.PassiveMS + m.ActiveMS + m.OverheadMS + rtt + tu + td
		want := max(q*m.PassiveMS, q*m.ActiveMS, tu, td, round/(k+1))
		if math.Abs(p.MSExchange-want) > 1e-5 || math.Abs(p.MSUpdate-want/q) > 1e-5 {
			t.Errorf("%s k=%d Q=%d: %.6f ms/exchange, %.6f ms/update; the formula gives %.6f, %.6f", p.Encoding, p.Staleness, p.LocalSteps, p.MSExchange, p.MSUpdate, want, want/q)
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
