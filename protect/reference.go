package protect

// reference is the name of the registered [Spec.Reference] defence; guarded
// by regMu.
var reference string

// Reference returns the name of the defence that protects nothing (the
// spec registered with [Spec.Reference]: "none" among the built-in ones):
// a run's protection by default, the setting the report measures the
// others' cost against, the legend of a run without any defence. It
// panics when no linked defence declares itself the reference: a
// programming error.
func Reference() string {
	regMu.RLock()
	defer regMu.RUnlock()
	if reference == "" {
		panic("protect: no registered defence is the Reference")
	}
	return reference
}

// IsReference reports whether method (a defence's name, or a legend's
// Method) is the reference defence, or empty.
func IsReference(method string) bool {
	return method == "" || method == Reference()
}
