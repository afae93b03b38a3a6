// Package configkey is the refusal of a configuration key's value as a
// type (Error), so that a caller with other names for the keys (the
// command line's flags) finds the keys an error refuses without reading
// its text. It imports nothing of splitguard: the packages config builds
// on (data, protect, attack/feature) refuse their keys with it too;
// config.KeyError is the same type.
package configkey

// Error is a refusal of a configuration key's value: Err says what is
// wrong in the library's terms and names the key as "key NAME"; Key lets
// a caller with other names for the keys (the command line's flags) find
// it without reading the text. A refusal about several keys is an
// Error wrapping an Error.
type Error struct {
	// Key is the configuration key refused (e.g. "test_frac").
	Key string
	// Err is the refusal; its text names the key.
	Err error
}

// Error returns the refusal's text, which names the key.
func (e *Error) Error() string { return e.Err.Error() }

// Unwrap returns the refusal.
func (e *Error) Unwrap() error { return e.Err }

// Keyed returns err as the refusal of keys (the first outermost); err
// itself when keys is empty or err is nil.
func Keyed(err error, keys ...string) error {
	if err == nil {
		return nil
	}
	for i := len(keys) - 1; i >= 0; i-- {
		err = &Error{Key: keys[i], Err: err}
	}
	return err
}

// KeysOf returns the keys of every Error in err's tree (through
// Unwrap() error and Unwrap() []error), each once, in the order a
// depth-first walk meets them.
func KeysOf(err error) []string {
	var keys []string
	seen := map[string]bool{}
	var walk func(error)
	walk = func(e error) {
		for e != nil {
			if k, ok := e.(*Error); ok && !seen[k.Key] {
				seen[k.Key] = true
				keys = append(keys, k.Key)
			}
			switch u := e.(type) {
			case interface{ Unwrap() []error }:
				for _, c := range u.Unwrap() {
					walk(c)
				}
				return
			case interface{ Unwrap() error }:
				e = u.Unwrap()
			default:
				return
			}
		}
	}
	walk(err)
	return keys
}

// Warning is a warning about configuration keys' values, not a refusal:
// Text says what may be wrong in the library's terms and names each key
// as "key NAME"; Keys lists them, so that a caller with other names for
// the keys (the command line's flags) rewrites them without reading the
// text. The zero Warning is no warning.
type Warning struct {
	Text string
	Keys []string
}

// Warn returns the warning text naming keys.
func Warn(text string, keys ...string) Warning { return Warning{Text: text, Keys: keys} }

// String returns the warning's text.
func (w Warning) String() string { return w.Text }

// LogArgs returns the attributes "key", NAME for each of w's keys, for a
// log/slog record of the warning.
func (w Warning) LogArgs() []any {
	args := make([]any, 0, 2*len(w.Keys))
	for _, k := range w.Keys {
		args = append(args, "key", k)
	}
	return args
}
