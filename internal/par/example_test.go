package par_test

import (
	"fmt"

	"github.com/splitguard/splitguard/internal/par"
)

// Each part writes only its own share of the output, so the result is the
// same whichever goroutine runs which part.
func ExampleDo() {
	rows := [][]float32{{1, 2}, {3, 4}, {5, 6}, {7, 8}}
	sums := make([]float32, len(rows))
	const parts = 2
	par.Do(parts, func(p int) {
		for i := p * len(rows) / parts; i < (p+1)*len(rows)/parts; i++ {
			sums[i] = rows[i][0] + rows[i][1]
		}
	})
	fmt.Println(sums)
	// Output: [3 7 11 15]
}
