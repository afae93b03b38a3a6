package sgemm

import "testing"

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
