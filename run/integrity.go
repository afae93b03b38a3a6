package run

import (
	"fmt"

	"github.com/splitguard/splitguard/integrity"
)

// alarmReason is the summary's reason for a run an integrity alarm
// ended after steps.
func alarmReason(a *integrity.Alarm, steps int64) string {
	return fmt.Sprintf("%v; ended after %d steps", a, steps)
}
