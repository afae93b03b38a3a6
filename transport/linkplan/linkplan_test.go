package linkplan

import (
	"math"
	"strings"
	"testing"
	"time"
)

// TestPredictByHand checks predictions worked out by hand for a step of
// C_p = 10 ms, C_a = 6 ms, a recompute of R = 4 ms (k > 0 only), overhead
// 2 ms, 1,000,000 bytes forward and 500,000 back over a 20 ms link of
// 100 Mbit/s (12.5 MB/s) each way: transfers of 80 ms up and 40 ms down,
// a synchronous round of 10+6+2+20+80+40 = 158 ms, and 162 ms with the
// recompute; and, with the parties on one machine or on hosts of their
// own of a few cores, of processor times that the test states.
func TestPredictByHand(t *testing.T) {
	ms := time.Millisecond
	wan := Link{RTT: 20 * ms, Up: 12.5e6, Down: 12.5e6}
	c := Costs{Passive: 10 * ms, Active: 6 * ms, Recompute: 4 * ms, Overhead: 2 * ms, Forward: 1e6, Backward: 5e5}
	slow := c
	slow.Active = 50 * ms
	// The same step's processor times, a fake calibration: the passive
	// computes on more than one core at once (14 ms of processor time in
	// 10 ms), the active too (9 in 6); a forward 5, the transport (both
	// ends) 7 ms per exchange. One exchange of k > 0, Q = 1 is
	// W = 14 + 9 + 5 + 7 = 35 ms of processor time.
	cpu := CPUTimes{Passive: 14 * ms, Active: 9 * ms, Recompute: 5 * ms, Transport: 7 * ms}
	sharing := func(n float64) Costs {
		s := c
		s.CPU, s.SharedCores = cpu, n
		return s
	}
	odd := sharing(2)
	odd.CPU.Transport += 1 // W = 35 ms + 1 ns
	// The same processor times on hosts of their own of n cores each:
	// the passive's host serves Q·14 (+ 5 when k > 0) + 7/2 ms per
	// exchange, the active's Q·9 + 7/2.
	hosts := func(n float64) Costs {
		s := c
		s.CPU, s.HostCores = cpu, n
		return s
	}
	// An active of 30 ms of processor time per step (e.g. on cores
	// that it gets only part of the time): its host serves 30 + 3.5 ms.
	busy := hosts(1)
	busy.CPU.Active = 30 * ms
	oddHost := hosts(1)
	oddHost.CPU.Transport += 1 // each end's half 3.5 ms + 0.5 ns
	tests := []struct {
		name     string
		l        Link
		c        Costs
		s        Schedule
		exchange time.Duration
		update   time.Duration
		bound    Bound
	}{
		{"sync", wan, c, Schedule{0, 1}, 158 * ms, 158 * ms, BoundRound},
		// k = 1: the round with the recompute, 162/2 = 81, just above the
		// uplink's 80 (without the recompute it would be 79 < 80).
		{"k1", wan, c, Schedule{1, 1}, 81 * ms, 81 * ms, BoundRound},
		{"k4", wan, c, Schedule{4, 1}, 80 * ms, 80 * ms, BoundUplink},
		// Q = 2: both parties' local steps are on the round (the active
		// takes its own before it answers): 20+12+2+20+80+40 = 174 per
		// exchange, 87 per update.
		{"Q2", wan, c, Schedule{0, 2}, 174 * ms, 87 * ms, BoundRound},
		// Q = 4: 40+24+142 = 206, 51.5 per update.
		{"Q4", wan, c, Schedule{0, 4}, 206 * ms, 51500 * time.Microsecond, BoundRound},
		// k = 2, Q = 4: (44+24+142)/3 = 70 ms < 80 ms uplink.
		{"k2Q4", wan, c, Schedule{2, 4}, 80 * ms, 20 * ms, BoundUplink},
		// Loopback (no delay, no bandwidth limit): 18 ms synchronous; with
		// k = 1 the passive's 10+4 ms bounds (round 22/2 = 11).
		{"loopback", Link{}, c, Schedule{0, 1}, 18 * ms, 18 * ms, BoundRound},
		{"loopback k1", Link{}, c, Schedule{1, 1}, 14 * ms, 14 * ms, BoundPassive},
		// A slow active, C_a = 50 ms, Q = 3: the round 30+150+2+20+80+40 =
		// 322 ms at k = 0 (107.333… per update, truncated to the
		// nanosecond); at k = 2 the round's share, (34+150+142)/3 =
		// 108.67 ms, is below the active's 150 ms per exchange.
		{"slow active", wan, slow, Schedule{0, 3}, 322 * ms, 107333333, BoundRound},
		{"slow active k1", wan, slow, Schedule{1, 3}, 163 * ms, 163 * ms / 3, BoundRound},
		{"slow active k2", wan, slow, Schedule{2, 3}, 150 * ms, 50 * ms, BoundActive},
		// Downlink slower than uplink: 500,000 B at 1 MB/s = 500 ms.
		{"slow downlink", Link{RTT: 20 * ms, Up: 12.5e6, Down: 1e6}, c, Schedule{2, 1}, 500 * ms, 500 * ms, BoundDownlink},
		// 162/3 = 54 ms < 80 ms uplink.
		{"k2", wan, c, Schedule{2, 1}, 80 * ms, 80 * ms, BoundUplink},
		// Shared cores, on loopback at k = 1 (wall: passive 10+4 =
		// 14 ms, round 22/2 = 11): one core serves W = 35 ms per
		// exchange; two 17.5 ms, still more than the passive's 14; four
		// 8.75, less than the passive's own chain, which bounds.
		{"1 shared core k1", Link{}, sharing(1), Schedule{1, 1}, 35 * ms, 35 * ms, BoundShared},
		{"2 shared cores k1", Link{}, sharing(2), Schedule{1, 1}, 17500 * time.Microsecond, 17500 * time.Microsecond, BoundShared},
		{"4 shared cores k1", Link{}, sharing(4), Schedule{1, 1}, 14 * ms, 14 * ms, BoundPassive},
		// k = 0 has no recompute: W = 14+9+7 = 30 ms on one core, more
		// than the synchronous round of 18 ms.
		{"1 shared core sync", Link{}, sharing(1), Schedule{0, 1}, 30 * ms, 30 * ms, BoundShared},
		// Q = 2, k = 0: W = 2·(14+9)+7 = 53 ms; the round 20+12+2 =
		// 34 ms. One core: 53 per exchange, 26.5 per update; two: 26.5
		// < 34, the round bounds.
		{"1 shared core Q2", Link{}, sharing(1), Schedule{0, 2}, 53 * ms, 26500 * time.Microsecond, BoundShared},
		{"2 shared cores Q2", Link{}, sharing(2), Schedule{0, 2}, 34 * ms, 17 * ms, BoundRound},
		// Over the WAN at k = 4 the uplink's 80 ms is more than 35/2.
		{"2 shared cores k4", wan, sharing(2), Schedule{4, 1}, 80 * ms, 80 * ms, BoundUplink},
		// Other work takes part of the cores: 0.7 of a core serves
		// 35 ms in 50 ms.
		{"0.7 shared cores k1", Link{}, sharing(0.7), Schedule{1, 1}, 50 * ms, 50 * ms, BoundShared},
		// W/N rounds up to a whole nanosecond: (35 ms + 1 ns)/2.
		{"shared rounding", Link{}, odd, Schedule{1, 1}, 17500001, 17500001, BoundShared},
		// Hosts of their own, on loopback at k = 1 (wall: passive 14 ms,
		// active 6, round 11): one core on each host serves the passive
		// 14+5+3.5 = 22.5 ms, the active 9+3.5 = 12.5; the passive's
		// bounds.
		{"1 host core k1", Link{}, hosts(1), Schedule{1, 1}, 22500 * time.Microsecond, 22500 * time.Microsecond, BoundPassiveHost},
		// Two cores each: 11.25 and 6.25 ms, below the passive's own
		// chain of 14 ms, which bounds (on one shared machine of two
		// cores, 17.5 above).
		{"2 host cores k1", Link{}, hosts(2), Schedule{1, 1}, 14 * ms, 14 * ms, BoundPassive},
		// k = 0 has no recompute: (14+3.5)/0.8 = 21.875 ms on the
		// passive's host (28.125 with the recompute), the active's
		// (9+3.5)/0.8 = 15.625, the round 18.
		{"0.8 host cores sync", Link{}, hosts(0.8), Schedule{0, 1}, 21875 * time.Microsecond, 21875 * time.Microsecond, BoundPassiveHost},
		// Q = 2, k = 0: the hosts serve 28+3.5 = 31.5 and 18+3.5 =
		// 21.5 ms, less than the round of 34 ms, which bounds.
		{"1 host core Q2", Link{}, hosts(1), Schedule{0, 2}, 34 * ms, 17 * ms, BoundRound},
		// The busy active at k = 4: its host 30+3.5 = 33.5 ms, the
		// passive's 22.5, the walls 14 and 6, the round 22/5 = 4.4.
		{"busy active host k4", Link{}, busy, Schedule{4, 1}, 33500 * time.Microsecond, 33500 * time.Microsecond, BoundActiveHost},
		// Over the WAN at k = 4 the uplink's 80 ms is more than the
		// hosts' 22.5 and 12.5.
		{"1 host core k4", wan, hosts(1), Schedule{4, 1}, 80 * ms, 80 * ms, BoundUplink},
		// The host's term rounds up to a whole nanosecond: 19 ms +
		// 3.5 ms + 0.5 ns.
		{"host rounding", Link{}, oddHost, Schedule{1, 1}, 22500001, 22500001, BoundPassiveHost},
		// The round rounds up to a whole nanosecond: 158 ms / 3.
		{"k2 rounding", Link{RTT: 158 * ms}, Costs{}, Schedule{2, 1}, 52666667, 52666667, BoundRound},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Predict(tc.l, tc.c, tc.s)
			if err != nil {
				t.Fatal(err)
			}
			if p.PerExchange != tc.exchange || p.PerUpdate != tc.update || p.Bound != tc.bound {
				t.Errorf("%+v: %v per exchange, %v per update, bound %q; want %v, %v, %q", tc.s, p.PerExchange, p.PerUpdate, p.Bound, tc.exchange, tc.update, tc.bound)
			}
		})
	}
}

// TestTransfer checks the transfer time of a few sizes by hand.
func TestTransfer(t *testing.T) {
	for _, tc := range []struct {
		n    int64
		bw   float64
		want time.Duration
	}{{1053749, 12.5e6, 84299920}, {0, 12.5e6, 0}, {1 << 20, 0, 0}, {3, 1e9, 3}} {
		if got := Transfer(tc.n, tc.bw); got != tc.want {
			t.Errorf("Transfer(%d, %g) = %v, want %v", tc.n, tc.bw, got, tc.want)
		}
	}
}

// TestPredictRefuses checks that impossible settings are errors naming
// what is wrong.
func TestPredictRefuses(t *testing.T) {
	for _, tc := range []struct {
		l    Link
		c    Costs
		s    Schedule
		want string
	}{
		{Link{RTT: -1}, Costs{}, Schedule{0, 1}, "round trip"},
		{Link{Up: -5}, Costs{}, Schedule{0, 1}, "bandwidths"},
		{Link{}, Costs{Active: -1}, Schedule{0, 1}, "negative cost"},
		{Link{}, Costs{Recompute: -1}, Schedule{1, 1}, "negative cost"},
		{Link{}, Costs{}, Schedule{-1, 1}, "staleness -1"},
		{Link{}, Costs{}, Schedule{0, 0}, "0 local steps"},
		{Link{}, Costs{CPU: CPUTimes{Transport: -1}}, Schedule{0, 1}, "negative cost"},
		{Link{}, Costs{SharedCores: -1}, Schedule{0, 1}, "-1 shared cores"},
		{Link{}, Costs{SharedCores: math.Inf(1), CPU: CPUTimes{Active: 1}}, Schedule{0, 1}, "+Inf shared cores"},
		{Link{}, Costs{SharedCores: 2}, Schedule{0, 1}, "2 shared cores but no processor times"},
		{Link{}, Costs{HostCores: -1, CPU: CPUTimes{Active: 1}}, Schedule{0, 1}, "-1 host cores"},
		{Link{}, Costs{HostCores: math.Inf(1), CPU: CPUTimes{Active: 1}}, Schedule{0, 1}, "+Inf host cores"},
		{Link{}, Costs{HostCores: math.NaN(), CPU: CPUTimes{Active: 1}}, Schedule{0, 1}, "NaN host cores"},
		{Link{}, Costs{HostCores: 1}, Schedule{0, 1}, "1 host cores but no processor times"},
		{Link{}, Costs{SharedCores: 2, HostCores: 1, CPU: CPUTimes{Active: 1}}, Schedule{0, 1}, "2 shared cores and 1 host cores"},
	} {
		if _, err := Predict(tc.l, tc.c, tc.s); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Predict(%+v, %+v, %+v) = %v, want an error containing %q", tc.l, tc.c, tc.s, err, tc.want)
		}
	}
}
