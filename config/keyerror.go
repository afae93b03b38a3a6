package config

import (
	"fmt"
	"strings"
)

// KeyError is a refusal of a configuration key's value: Err says what is
// wrong in the library's terms and names the key as "key NAME"; Key lets
// a caller with other names for the keys (the command line's flags) find
// it without reading the text. A refusal about several keys is a
// KeyError wrapping a KeyError.
type KeyError struct {
	// Key is the configuration key refused (e.g. "test_frac").
	Key string
	// Err is the refusal; its text names the key.
	Err error
}

// Error returns the refusal's text, which names the key.
func (e *KeyError) Error() string { return e.Err.Error() }

// Unwrap returns the refusal.
func (e *KeyError) Unwrap() error { return e.Err }

// Keyed returns err as the refusal of keys (the first outermost); err
// itself when keys is empty or err is nil.
func Keyed(err error, keys ...string) error {
	if err == nil {
		return nil
	}
	for i := len(keys) - 1; i >= 0; i-- {
		err = &KeyError{Key: keys[i], Err: err}
	}
	return err
}

// KeysOf returns the keys of every KeyError in err's tree (through
// Unwrap() error and Unwrap() []error), each once, in the order a
// depth-first walk meets them.
func KeysOf(err error) []string {
	var keys []string
	seen := map[string]bool{}
	var walk func(error)
	walk = func(e error) {
		for e != nil {
			if k, ok := e.(*KeyError); ok && !seen[k.Key] {
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
