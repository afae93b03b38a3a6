package netrun

// alarm counts one training batch whose detector's score reached its
// alarm threshold (splitguard_integrity_alarms_total{detector}).
func (m *activeMetrics) alarm(detector string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.alarms.WithLabelValues(detector).Inc()
}
