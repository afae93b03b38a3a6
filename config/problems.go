package config

// Key marks, among the arguments of Problems.Add, a configuration key the
// problem refuses; it is not formatted.
type Key = keyArg

// Problems collects the refusals of a configuration outside this package
// (a networked party's keys, say), each an error, those that name keys
// (Key arguments) a *KeyError, so that a caller finds the keys with
// KeysOf instead of reading the text.
type Problems struct{ list problemList }

// Add records the problem format says with args, less the Key arguments,
// which name the keys it refuses.
func (p *Problems) Add(format string, args ...any) { p.list.add(format, args...) }

// Err returns the problems as one error, their texts after prefix joined
// by "; ", or nil when there is none.
func (p *Problems) Err(prefix string) error { return p.list.err(prefix) }
