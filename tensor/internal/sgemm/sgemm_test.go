package sgemm

import (
	"runtime"
	"testing"
)

// TestFineRowParts: the row ranges of a tall product, by hand.
func TestFineRowParts(t *testing.T) {
	for _, tc := range []struct {
		parts, m, n, k, want int
	}{
		{2, 8192, 128, 128, 8},     // four a core, 1024 rows each
		{2, 4096, 128, 128, 4},     // 1024 rows each at most
		{2, 1024, 128, 128, 1},     // under 2·fineRows rows: one a core stays
		{16, 8192, 128, 128, 8},    // fewer than the cores: grid's 16 stay
		{2, 8192, 16, 8, 2},        // 1,048,576 flops: two parts of parFlops
		{4, 1 << 20, 128, 128, 16}, // four a core
	} {
		mt := (tc.m + 15) / 16
		if got := fineRowParts(tc.parts, tc.m, mt, tc.m*tc.n*tc.k); got != tc.want {
			t.Errorf("fineRowParts(%d, m %d, flops %d×%d×%d) = %d, want %d", tc.parts, tc.m, tc.m, tc.n, tc.k, got, tc.want)
		}
	}
}

// TestCutThinAndShortK: how cut splits a thin product (one or two
// columns, into row ranges of at least thinFlops multiply-adds) and a
// product with k below minCutK (counted as k = minCutK), by hand.
func TestCutThinAndShortK(t *testing.T) {
	for _, tc := range []struct {
		procs, m, n, k int
		pr, pc         int
	}{
		{2, 1024, 1, 128, 2, 1},   // logit forward at batch 1024: 131,072 = 2·thinFlops
		{2, 128, 1, 1024, 2, 1},   // its weight gradient xᵀ·dy
		{16, 128, 1, 1024, 2, 1},  // two parts of thinFlops, however many cores
		{16, 128, 1, 8192, 16, 1}, // batch 8192: 16 parts of 65,536
		{2, 13, 1, 1024, 1, 1},    // a wide linear part's gradient: 13,312, under thinFlops
		{16, 6, 2, 65536, 1, 1},   // one tile of rows (the AVX2 kernel's 6): not cut
		{2, 1024, 128, 1, 2, 1},   // dy·Wᵀ of a logit layer, k = 1: counted as 8
		{2, 512, 128, 1, 1, 1},    // 524,288 counted: one part
		{1, 1024, 1, 128, 1, 1},   // one core
	} {
		old := runtime.GOMAXPROCS(tc.procs)
		pr, pc := avx2Kernel.cut(tc.m, tc.n, tc.k, 1)
		runtime.GOMAXPROCS(old)
		if pr != tc.pr || pc != tc.pc {
			t.Errorf("GOMAXPROCS %d: cut(%d×%d, k %d) = %d×%d, want %d×%d", tc.procs, tc.m, tc.n, tc.k, pr, pc, tc.pr, tc.pc)
		}
	}
}
