package config

import (
	"fmt"
	"strings"

	"github.com/splitguard/splitguard/configkey"
)

// KeyError is a refusal of a configuration key's value (configkey.Error):
// Err says what is wrong in the library's terms and names the key as "key
// NAME"; Key lets a caller with other names for the keys (the command
// line's flags) find it without reading the text. A refusal about
// several keys is a KeyError wrapping a KeyError.
type KeyError = configkey.Error

// Keyed returns err as the refusal of keys (the first outermost); err
// itself when keys is empty or err is nil.
func Keyed(err error, keys ...string) error { return configkey.Keyed(err, keys...) }

// Warning is a warning about configuration keys' values
// (configkey.Warning): its text names each key as "key NAME", its Keys
// list them for a caller with other names for the keys.
type Warning = configkey.Warning

// KeysOf returns the keys of every KeyError in err's tree (through
// Unwrap() error and Unwrap() []error), each once, in the order a
// depth-first walk meets them.
func KeysOf(err error) []string { return configkey.KeysOf(err) }

// keyArg names, among the arguments of a validation problem (see
// problemList.add), a configuration key the problem refuses; it is not
// formatted.
type keyArg string

// problemList collects a configuration's problems, each an error, those
// about keys *KeyError.
type problemList []error

// add records the problem format says with args, less the keyArg
// arguments, which name the keys it refuses.
func (p *problemList) add(format string, args ...any) {
	var keys []string
	kept := args[:0:0]
	for _, a := range args {
		if k, ok := a.(keyArg); ok {
			keys = append(keys, string(k))
			continue
		}
		kept = append(kept, a)
	}
	*p = append(*p, Keyed(fmt.Errorf(format, kept...), keys...))
}

// err returns the problems as one error, their texts after prefix joined
// by "; ", or nil when there is none.
func (p problemList) err(prefix string) error {
	if len(p) == 0 {
		return nil
	}
	return &problemsError{prefix: prefix, errs: p}
}

// problemsError is several problems as one error, each reachable through
// Unwrap.
type problemsError struct {
	prefix string
	errs   []error
}

func (e *problemsError) Error() string {
	var b strings.Builder
	b.WriteString(e.prefix)
	for i, err := range e.errs {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(err.Error())
	}
	return b.String()
}

func (e *problemsError) Unwrap() []error { return e.errs }
