package registry

import (
	"slices"
	"sync"
	"testing"
)

func TestMap(t *testing.T) {
	var r Map[int]
	if _, ok := r.Lookup("a"); ok || len(r.Names()) != 0 {
		t.Fatal("the zero Map is not empty")
	}
	for _, c := range []struct {
		name string
		v    int
		want bool
	}{{"b", 2, true}, {"a", 1, true}, {"b", 3, false}, {"c", 4, true}} {
		if got := r.Add(c.name, c.v); got != c.want {
			t.Errorf("Add(%q, %d) = %v, want %v", c.name, c.v, got, c.want)
		}
	}
	if v, ok := r.Lookup("b"); !ok || v != 2 {
		t.Errorf("Lookup(b) = %d, %v; want 2 (the first Add), true", v, ok)
	}
	if got := r.Names(); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Errorf("Names() = %v, want [a b c]", got)
	}
	// concurrent use (go test -race)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.Add(string(rune('d'+i)), i)
			r.Lookup("a")
			r.Names()
		}()
	}
	wg.Wait()
	if n := len(r.Names()); n != 11 {
		t.Errorf("%d names after 8 concurrent adds, want 11", n)
	}
}
