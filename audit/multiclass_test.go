package audit

import (
	"math/rand/v2"
	"testing"

	"github.com/splitguard/splitguard/tensor"
)

// TestMultiClass: four separated clusters (sizes 8, 6, 4, 2) whose classes
// come from the IDs are recovered exactly; majority is 8/20; the result
// does not depend on other calls; an unknown ID is an error.
func TestMultiClass(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	const n = 20
	x := tensor.New(n, 4)
	ids := make([]uint64, n)
	classes := make([]uint8, 2*n)
	sizes := []int{8, 6, 4, 2}
	i := 0
	for c, s := range sizes {
		for range s {
			ids[i] = uint64(2*i + 1)
			classes[ids[i]] = uint8(10 + c)
			for k := range 4 {
				v := 0.05 * r.NormFloat64()
				if k == c {
					v += 5
				}
				x.Set(i, k, float32(v))
			}
			i++
		}
	}
	res, err := MultiClass(7, x, ids, classes, 1)
	if err != nil {
		t.Fatal(err)
	}
	if res.Accuracy != 1 || res.Classes != 4 || res.Majority != 0.4 || res.Rows != n || res.Step != 7 {
		t.Fatalf("%+v", res)
	}
	again, _ := MultiClass(7, x, ids, classes, 1)
	if again != res {
		t.Errorf("second call %+v, first %+v", again, res)
	}
	ids[3] = 2 * n
	if _, err := MultiClass(7, x, ids, classes, 1); err == nil {
		t.Error("ID without a class accepted")
	}
}
