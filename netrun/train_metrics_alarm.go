package netrun

// alarm counts one training batch whose detector's score reached its
// alarm threshold (splitguard_integrity_alarms_total{detector}).
func (m *activeMetrics) alarm(detector string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.alarms.WithLabelValues(detector).Inc()
}

// armAlarms serves splitguard_integrity_alarms_total at 0 for every
// detector with an alarm threshold, before its first alarm.
func (m *activeMetrics) armAlarms(thresholds map[string]float64) {
	for d, t := range thresholds {
		if t > 0 {
			m.alarms.WithLabelValues(d)
		}
	}
}
