package buf

import "testing"

func TestGrow(t *testing.T) {
	s := make([]int, 2, 5)
	s[0], s[1] = 7, 8
	g := Grow(s, 4)
	if len(g) != 4 || &g[0] != &s[0] || g[0] != 7 || g[1] != 8 {
		t.Fatalf("Grow(len 2 cap 5, 4) = %v (cap %d), want s's storage, length 4", g, cap(g))
	}
	h := Grow(s, 6)
	if len(h) != 6 || &h[0] == &s[0] || h[0] != 0 {
		t.Fatalf("Grow(cap 5, 6) = %v, want a new zeroed slice of 6", h)
	}
	if e := Grow[int](nil, 0); len(e) != 0 {
		t.Fatalf("Grow(nil, 0) has length %d", len(e))
	}
}
