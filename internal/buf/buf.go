// Package buf holds the one helper every package that reuses scratch
// buffers across calls needs: Grow.
package buf

// Grow returns s with length n, reusing its storage when its capacity is
// at least n and allocating a new zeroed slice otherwise. The contents of
// a reused s are left as they were.
func Grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}
