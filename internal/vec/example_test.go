package vec_test

import (
	"fmt"
	"math"

	"github.com/splitguard/splitguard/internal/vec"
)

func ExampleFirstNonFinite() {
	x := []float32{0.5, -2, float32(math.Inf(1)), float32(math.NaN())}
	fmt.Println(vec.FirstNonFinite(x), vec.FirstNonFinite(x[:2]))
	// Output: 2 -1
}

func ExampleMaxPool2x2Row() {
	// One image row pair of 4 pixels, 1 channel (a 2×4 image): two windows.
	x := []float32{
		1, 5, 2, 2,
		3, 4, 9, 2,
	}
	y, arg := make([]float32, 2), make([]int32, 2)
	vec.MaxPool2x2Row(y, arg, x, 0, 4, 1, 2)
	fmt.Println(y, arg)
	// Output: [5 9] [1 6]
}

func ExampleSumSquares() {
	// Two rows of three columns, stored four floats apart.
	m := []float32{
		3, 4, 0, 99,
		1, 2, 2,
	}
	dst := make([]float64, 2)
	vec.SumSquares(dst, m, 3, 4)
	fmt.Println(dst, math.Sqrt(dst[0]))
	// Output: [25 9] 5
}
