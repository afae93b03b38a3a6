package run

import (
	"fmt"

	"github.com/splitguard/splitguard/integrity"
	"github.com/splitguard/splitguard/rundir"
)

// alarmReason is the summary's reason for a run an integrity alarm
// ended after steps.
func alarmReason(a *integrity.Alarm, steps int64) string {
	return fmt.Sprintf("%v; ended after %d steps", a, steps)
}

// raiseAlarms records the alarms the guard's last batch raised against
// the alarm thresholds (key integrity_alarm), which leave the run going.
func raiseAlarms(rec *rundir.Recorder, g *integrity.Guard) {
	for _, a := range g.Raised() {
		rec.IntegrityAlarm(a.Detector, a.Step, a.Score, a.Threshold, a.Error())
	}
}
