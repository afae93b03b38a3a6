// Package registry is the one map of named plug-ins behind the registries
// whose entries are plain values (data's table and image formats, model's
// kinds): safe for concurrent use, names listed sorted.
package registry

import (
	"slices"
	"sync"
)

// Map holds values by name. The zero value is empty and ready.
type Map[T any] struct {
	mu sync.RWMutex
	m  map[string]T
}

// Add stores v under name and reports whether it did: false, storing
// nothing, when the name is taken.
func (r *Map[T]) Add(name string, v T) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.m[name]; dup {
		return false
	}
	if r.m == nil {
		r.m = make(map[string]T)
	}
	r.m[name] = v
	return true
}

// Lookup returns the value stored under name.
func (r *Map[T]) Lookup(name string) (T, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	v, ok := r.m[name]
	return v, ok
}

// Names returns the stored names, sorted.
func (r *Map[T]) Names() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	names := make([]string, 0, len(r.m))
	for n := range r.m {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}
