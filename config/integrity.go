package config

import (
	"math"
	"slices"

	"github.com/splitguard/splitguard/integrity"
)

// validateIntegrity checks the free-riding mode, the detectors and their
// thresholds.
func (c *Config) validateIntegrity(bad func(string, ...any)) {
	if c.FreeRide != "" && !slices.Contains(integrity.TamperNames(), c.FreeRide) {
		bad("unknown free-riding mode %q, want one of %v (key free_ride)", c.FreeRide, integrity.TamperNames(), keyArg("free_ride"))
	}
	c.validateBackdoor(bad)
	c.validatePassiveOptimizer(bad)
	if c.FreeRideFrom < 0 {
		bad("free-riding from step %d, want at least 0 (key free_ride_from)", c.FreeRideFrom, keyArg("free_ride_from"))
	}
	c.validateAlarms(bad)
	for _, d := range c.DetectorsOn() {
		if !slices.Contains(integrity.DetectorNames(), d) {
			bad("unknown detector %q, want one of %v (key detectors)", d, integrity.DetectorNames(), keyArg("detectors"))
		} else if integrity.IsCrossParty(d) && len(c.Parties) < 2 {
			bad("detector %s reconstructs each passive party's embedding from the other parties' and needs at least two passive parties (key parties)", d, keyArg("parties"))
		}
	}
	for d, v := range c.IntegrityStop {
		if !slices.Contains(c.Detectors, d) {
			bad("a threshold for detector %q, which is not on (key integrity_stop; key detectors)", d, keyArg("integrity_stop"), keyArg("detectors"))
		}
		if !(v > 0) {
			bad("threshold %g for detector %q, want > 0 (key integrity_stop)", v, d, keyArg("integrity_stop"))
		}
	}
	if c.VflipRowsThreshold != 0 && !(c.VflipRowsThreshold > 0 && !math.IsInf(c.VflipRowsThreshold, 1)) {
		bad("vflip_rows threshold %g, want a z-score > 0 (key vflip_rows_threshold)", c.VflipRowsThreshold, keyArg("vflip_rows_threshold"))
	}
	if c.VflipRowsThreshold != 0 && !slices.ContainsFunc(c.DetectorsOn(), integrity.IsRowPurifier) {
		bad("a row purifier's vote threshold (key vflip_rows_threshold) with no row-purifying detector on (key detectors; row purifiers: %v)", integrity.RowPurifierNames(), keyArg("vflip_rows_threshold"), keyArg("detectors"))
	}
	if c.MinPassiveGain < 0 || c.MinPassiveGain >= 1 || c.MinPassiveGain != c.MinPassiveGain {
		bad("minimum passive gain %g, want in [0, 1) (key min_passive_gain)", c.MinPassiveGain, keyArg("min_passive_gain"))
	}
	if c.MinPassiveGain > 0 && !c.Contribution {
		bad("a minimum passive gain (key min_passive_gain) needs the contribution measure (key contribution)", keyArg("min_passive_gain"), keyArg("contribution"))
	}
	if c.Contribution && c.ValFrac == 0 {
		bad("the contribution measure (key contribution) needs a validation split (key val_frac > 0)", keyArg("contribution"), keyArg("val_frac"))
	}
}

// NewTamper returns the passive party's free-riding mode, nil for an
// honest party.
func (c *Config) NewTamper() (integrity.Tamper, error) {
	if c.FreeRide == "" {
		return nil, nil
	}
	return integrity.NewTamper(c.FreeRide, c.FreeRideFrom, c.Seed)
}

// NewGuard returns the active party's integrity guard of the configured
// detectors, thresholds and minimum passive gain.
func (c *Config) NewGuard() (*integrity.Guard, error) {
	g, err := integrity.NewGuard(c.DetectorsOn(), c.IntegrityStop, c.MinPassiveGain)
	g.SetAlarms(c.IntegrityAlarm)
	if t, ok := g.RowPurifier().(interface{ SetRowThreshold(float64) }); ok && c.VflipRowsThreshold > 0 {
		t.SetRowThreshold(c.VflipRowsThreshold)
	}
	return g, err
}
