package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"
	"testing"
)

// TestPlanLinkJSON runs plan-link on a tiny MLP and recomputes every
// prediction from the printed costs with the formula of
// docs/methods/wan.md, written out here: with P = Q·C_p + R (the
// recompute R only when k > 0) and A = Q·C_a, per exchange
// max(P, A, B_f/W_up, B_b/W_down, round/(k+1)) with round =
// P + A + o + RTT + B_f/W_up + B_b/W_down, per update that over Q; with
// shared cores N also at least W/N, with host cores N at least each
// host's processor time over N.
func TestPlanLinkJSON(t *testing.T) {
	for _, tc := range []struct {
		name        string
		flags       []string
		cores, host float64 // --shared-cores, --host-cores; 0: not given
	}{
		{"two hosts", []string{"--active-ms", "2.5"}, 0, 0},
		// One core: W is at least the passive's and the active's processor
		// time, which bound the predictions where the link does not.
		{"one shared core", []string{"--shared-cores", "1", "--rtt", "0s", "--up", "0", "--down", "0"}, 1, 0},
		{"three shared cores", []string{"--shared-cores", "3"}, 3, 0},
		{"one core per host", []string{"--host-cores", "1"}, 0, 1},
		// A hundredth of a core per host: each host's term is 100 times
		// its processor time, which bounds some option without a link.
		{"0.01 cores per host", []string{"--host-cores", "0.01", "--rtt", "0s", "--up", "0", "--down", "0"}, 0, 0.01},
	} {
		t.Run(tc.name, func(t *testing.T) { checkPlanLinkJSON(t, tc.flags, tc.cores, tc.host) })
	}
}

// checkPlanLinkJSON runs plan-link --json with flags after a fixed set
// (the later of a repeated flag wins) and recomputes every prediction
// from the printed costs with the formula written out here, for cores
// shared by both parties or host cores of each (0: not given).
func checkPlanLinkJSON(t *testing.T, flags []string, cores, host float64) {
	cmd := newRootCmd()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetArgs(append([]string{"plan-link", "--model", "mlp", "--layers", "16,16", "--cut", "1", "--batch", "8",
		"--rtt", "10ms", "--up", "8", "--down", "4", "--encodings", "f32,int8", "--plan-staleness", "0,1", "--plan-local-steps", "1,2",
		"--steps", "3", "--warmup", "1", "--json"}, flags...))
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	var got struct {
		RTTMS, UpMbit, DownMbit float64
		SharedCores, HostCores  float64
		Measured                []struct {
			Encoding                                     string
			PassiveMS, ActiveMS, RecomputeMS, OverheadMS float64
			Forward, Backward                            float64
			CPUP, CPUA, CPUR, CPUT                       float64
		}
		Predicted []struct {
			Encoding              string
			Staleness, LocalSteps int
			MSExchange, MSUpdate  float64
			Bound                 string
			Loopback, Ratio       float64
		}
		MaxLinkRatio float64
		Recommended  *struct {
			Encoding              string
			Staleness, LocalSteps int
		}
	}
	// encoding/json matches the fields case-insensitively; the snake-case
	// keys need their names.
	raw := strings.NewReplacer(`"passive_ms"`, `"PassiveMS"`, `"active_ms"`, `"ActiveMS"`, `"overhead_ms"`, `"OverheadMS"`, `"recompute_ms"`, `"RecomputeMS"`,
		`"bytes_forward"`, `"Forward"`, `"bytes_backward"`, `"Backward"`, `"local_steps"`, `"LocalSteps"`,
		`"ms_per_exchange"`, `"MSExchange"`, `"ms_per_update"`, `"MSUpdate"`, `"rtt_ms"`, `"RTTMS"`, `"up_mbit"`, `"UpMbit"`, `"down_mbit"`, `"DownMbit"`,
		`"loopback_ms_per_exchange"`, `"Loopback"`, `"link_over_loopback"`, `"Ratio"`, `"max_link_ratio"`, `"MaxLinkRatio"`,
		`"shared_cores"`, `"SharedCores"`, `"host_cores"`, `"HostCores"`, `"cpu_passive_ms"`, `"CPUP"`, `"cpu_active_ms"`, `"CPUA"`, `"cpu_recompute_ms"`, `"CPUR"`, `"cpu_transport_ms"`, `"CPUT"`).Replace(out.String())
	if err := json.Unmarshal([]byte(raw), &got); err != nil {
		t.Fatalf("%v in %s", err, out.String())
	}
	if len(got.Measured) != 2 || len(got.Predicted) != 8 {
		t.Fatalf("%d measured, %d predicted rows; want 2 and 8:\n%s", len(got.Measured), len(got.Predicted), out.String())
	}
	if got.SharedCores != cores || got.HostCores != host {
		t.Errorf("shared_cores %v, host_cores %v; want %v, %v", got.SharedCores, got.HostCores, cores, host)
	}
	for _, m := range got.Measured {
		if cores == 0 && host == 0 && m.ActiveMS != 2.5 {
			t.Errorf("--active-ms 2.5 gave active compute %v", m.ActiveMS)
		}
		// A forward of this tiny bottom takes a few microseconds, which
		// getrusage's microseconds may round to none.
		if m.CPUP <= 0 || m.CPUA <= 0 || m.CPUR < 0 || m.CPUT <= 0 {
			t.Errorf("%s: processor times %v, %v, %v, %v ms; want the recompute's non-negative, the others positive", m.Encoding, m.CPUP, m.CPUA, m.CPUR, m.CPUT)
		}
	}
	rtt, up, down := got.RTTMS, got.UpMbit*1e6/8/1e3, got.DownMbit*1e6/8/1e3 // ms; bytes per ms
	shared, hosts := 0, 0
	for _, p := range got.Predicted {
		var m = got.Measured[0]
		if p.Encoding == "int8" {
			m = got.Measured[1]
		}
		q, k := float64(p.LocalSteps), float64(p.Staleness)
		var tu, td float64
		if up > 0 {
			tu, td = m.Forward/up, m.Backward/down
		}
		pas, act := q*m.PassiveMS, q*m.ActiveMS
		w := q*(m.CPUP+m.CPUA) + m.CPUT
		wp, wa := q*m.CPUP+m.CPUT/2, q*m.CPUA+m.CPUT/2 // each host's
		if k > 0 {
			pas += m.RecomputeMS
			w += m.CPUR
			wp += m.CPUR
		}
		round := pas + act + m.OverheadMS + rtt + tu + td
		want := max(pas, act, tu, td, round/(k+1))
		if cores > 0 {
			want = max(want, w/cores)
		}
		if host > 0 {
			want = max(want, wp/host, wa/host)
		}
		// The printed costs are rounded to the nanosecond as the planner's
		// are; the prediction may differ by that.
		if math.Abs(p.MSExchange-want) > 2e-6 || math.Abs(p.MSUpdate-want/q) > 2e-6 {
			t.Errorf("%s k=%d Q=%d: %.6f ms/exchange, %.6f ms/update (%s); the formula gives %.6f, %.6f", p.Encoding, p.Staleness, p.LocalSteps, p.MSExchange, p.MSUpdate, p.Bound, want, want/q)
		}
		switch p.Bound {
		case "shared processors":
			shared++
		case "passive processors", "active processors":
			hosts++
		}
		// Without the link: no round trip, no transfer time.
		lb := max(pas, act, (pas+act+m.OverheadMS)/(k+1))
		if cores > 0 {
			lb = max(lb, w/cores)
		}
		if host > 0 {
			lb = max(lb, wp/host, wa/host)
		}
		if math.Abs(p.Loopback-lb) > 2e-6 || math.Abs(p.Ratio-p.MSExchange/p.Loopback) > 1e-9 {
			t.Errorf("%s k=%d Q=%d: loopback %.6f ms, ratio %.6f; the formula gives %.6f, %.6f", p.Encoding, p.Staleness, p.LocalSteps, p.Loopback, p.Ratio, lb, p.MSExchange/lb)
		}
	}
	// The recommendation, found by a second route: sort the options
	// within the ratio by (staleness, local steps, f32 before int8).
	var within []int
	for i, p := range got.Predicted {
		if p.Ratio <= got.MaxLinkRatio {
			within = append(within, i)
		}
	}
	sort.SliceStable(within, func(a, b int) bool {
		x, y := got.Predicted[within[a]], got.Predicted[within[b]]
		if x.Staleness != y.Staleness {
			return x.Staleness < y.Staleness
		}
		if x.LocalSteps != y.LocalSteps {
			return x.LocalSteps < y.LocalSteps
		}
		return x.Encoding == "f32" && y.Encoding != "f32"
	})
	switch {
	case len(within) == 0 && got.Recommended != nil:
		t.Errorf("recommended %+v, but no option is within %v× loopback", *got.Recommended, got.MaxLinkRatio)
	case len(within) > 0 && got.Recommended == nil:
		t.Errorf("no recommendation, but %d options are within %v× loopback", len(within), got.MaxLinkRatio)
	case len(within) > 0:
		w := got.Predicted[within[0]]
		if r := *got.Recommended; r.Encoding != w.Encoding || r.Staleness != w.Staleness || r.LocalSteps != w.LocalSteps {
			t.Errorf("recommended %+v, want %s k=%d Q=%d", r, w.Encoding, w.Staleness, w.LocalSteps)
		}
	}
	// On one core without a link, a pipelined exchange (k = 1) costs
	// about twice its share of the round in processor time: the shared
	// cores bound there, so the term above is exercised.
	if cores == 1 && shared == 0 {
		t.Errorf("no prediction bound by one shared core without a link:\n%s", out.String())
	}
	if host == 0.01 && hosts == 0 {
		t.Errorf("no prediction bound by a hundredth of a core per host without a link:\n%s", out.String())
	}
	if host == 0 && hosts > 0 || cores == 0 && shared > 0 {
		t.Errorf("%d predictions bound by host cores, %d by shared cores, without the flag:\n%s", hosts, shared, out.String())
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
		{[]string{"--shared-cores", "-1"}, "--shared-cores -1"},
		{[]string{"--shared-cores", "2", "--passive-ms", "3"}, "--shared-cores plans both parties on one machine"},
		{[]string{"--host-cores", "-1"}, "--host-cores -1"},
		{[]string{"--host-cores", "+Inf"}, "--host-cores +Inf"},
		{[]string{"--host-cores", "1", "--shared-cores", "2"}, "--host-cores plans each party on a host of its own, --shared-cores both on one machine"},
		{[]string{"--host-cores", "1", "--passive-ms", "3"}, "--host-cores plans each party's host with this machine's processor times"},
		{[]string{"--host-cores", "1", "--active-ms", "3"}, "--host-cores plans each party's host with this machine's processor times"},
		{[]string{"--wire-compression", "gzip"}, `unknown wire compression "gzip"`},
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

// TestPlanLinkCompression: with --wire-compression zstd the measured
// table says the messages were compressed and the recommendation carries
// the flag; without it neither does.
func TestPlanLinkCompression(t *testing.T) {
	for _, comp := range []string{"none", "zstd"} {
		cmd := newRootCmd()
		var out bytes.Buffer
		cmd.SetOut(&out)
		cmd.SetArgs([]string{"plan-link", "--model", "mlp", "--layers", "16,16", "--cut", "1", "--batch", "8",
			"--encodings", "int4", "--plan-staleness", "0", "--plan-local-steps", "1", "--steps", "2", "--warmup", "0",
			"--max-link-ratio", "1e9", "--wire-compression", comp})
		if err := cmd.Execute(); err != nil {
			t.Fatal(err)
		}
		on := comp == "zstd"
		if got := strings.Contains(out.String(), "messages compressed with zstd"); got != on {
			t.Errorf("%s: the heading says compressed: %t\n%s", comp, got, out.String())
		}
		if got := strings.Contains(out.String(), "--wire-gradient int4 --wire-compression zstd --staleness 0"); got != on {
			t.Errorf("%s: the recommendation names --wire-compression: %t\n%s", comp, got, out.String())
		}
	}
}

// TestPlanLinkHostCores: --host-cores is named where the plan puts the
// parties, and the check, which runs both parties in this process, says
// that it does not plan hosts of their own and predicts without them.
func TestPlanLinkHostCores(t *testing.T) {
	for _, tc := range []struct {
		o    planLinkOptions
		want string
	}{
		{planLinkOptions{HostCores: 2}, "each party on a host of its own of 2 cores, shared by its compute and its end of the transport"},
		{planLinkOptions{HostCores: 0.5}, "each party on a host of its own of 0.5 cores"},
		{planLinkOptions{SharedCores: 2}, "both parties and the transport on one machine of 2 cores"},
		{planLinkOptions{}, "each party on a host of its own"},
	} {
		if got := hosts(tc.o); !strings.HasPrefix(got, tc.want) {
			t.Errorf("hosts(%+v) = %q, want it to begin %q", tc.o, got, tc.want)
		}
	}
	if got := hosts(planLinkOptions{}); strings.Contains(got, "cores") {
		t.Errorf("hosts without --host-cores = %q, names cores", got)
	}
	if got, want := sharedNote(planLinkOptions{HostCores: 1}), "; --host-cores 1 not used: both parties run in this process"; !strings.HasPrefix(got, want) {
		t.Errorf("the check's note with --host-cores 1 is %q, want it to begin %q", got, want)
	}
	if got := sharedNote(planLinkOptions{}); strings.Contains(got, "host-cores") {
		t.Errorf("the check's note without --host-cores is %q", got)
	}
	if testing.Short() {
		t.Skip("runs a short two-party run over an emulated link")
	}
	cmd := newRootCmd()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetArgs([]string{"plan-link", "--model", "mlp", "--layers", "16,16", "--cut", "1", "--batch", "8",
		"--rtt", "2ms", "--up", "0", "--down", "0", "--encodings", "int8", "--plan-staleness", "1", "--plan-local-steps", "1",
		"--steps", "3", "--warmup", "1", "--host-cores", "1", "--check"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	for _, want := range []string{"each party on a host of its own of 1 cores", "--host-cores 1 not used: both parties run in this process"} {
		if !strings.Contains(text, want) {
			t.Errorf("the output does not say %q:\n%s", want, text)
		}
	}
	i := strings.Index(text, "check over the emulated link")
	if i < 0 {
		t.Fatalf("no check in the output:\n%s", text)
	}
	check := text[i:]
	if strings.Contains(check, "passive processors") || strings.Contains(check, "active processors") {
		t.Errorf("the check's prediction is bound by a host's cores:\n%s", check)
	}
}
