package buf_test

import (
	"fmt"

	"github.com/splitguard/splitguard/internal/buf"
)

func ExampleGrow() {
	scratch := buf.Grow[float64](nil, 3) // allocates
	p := &scratch[0]
	scratch = buf.Grow(scratch, 2) // reuses
	fmt.Println(len(scratch), &scratch[0] == p)
	// Output: 2 true
}
