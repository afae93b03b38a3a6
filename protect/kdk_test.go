package protect

import (
	"math"
	"strings"
	"testing"
)

// TestKDkTargets checks KDk's two-class targets against the definition
// worked by hand from the multi-class one (true class 1−ε, the other of
// the k = 2 anonymity set ε/(k−1) = ε), and that decoding inverts them.
func TestKDkTargets(t *testing.T) {
	for _, c := range []struct {
		eps        float64
		neg, pos   float32 // t(0), t(1) by hand
		p, decoded float64 // a prediction and (p−ε)/(1−2ε) by hand
	}{
		{0, 0, 1, 0.3, 0.3},
		{0.1, 0.1, 0.9, 0.5, 0.5},
		{0.25, 0.25, 0.75, 0.7, 0.9},
		{0.4, 0.4, 0.6, 0.45, 0.25},
	} {
		c0, err := BuildCodec(Params{"kdk_eps": c.eps}, 7)
		if err != nil {
			t.Fatal(err)
		}
		k := c0.(*KDk)
		if got0, got1 := k.Encode(0), k.Encode(1); math.Abs(float64(got0-c.neg)) > 1e-7 || math.Abs(float64(got1-c.pos)) > 1e-7 {
			t.Errorf("ε=%v: targets %v, %v; want %v, %v", c.eps, got0, got1, c.neg, c.pos)
		}
		if d := k.Decode(c.p); math.Abs(d-c.decoded) > 1e-12 {
			t.Errorf("ε=%v: Decode(%v) = %v, want %v", c.eps, c.p, d, c.decoded)
		}
		for y := range uint8(2) {
			if d := k.Decode(float64(k.Encode(y))); math.Abs(d-float64(y)) > 1e-6 {
				t.Errorf("ε=%v: Decode(Encode(%d)) = %v", c.eps, y, d)
			}
		}
		// The target of the positive class stays above the negative's: the
		// defence blurs the label, never swaps it.
		if !(k.Encode(1) > k.Encode(0)) && c.eps < 0.5 {
			t.Errorf("ε=%v: labels swapped", c.eps)
		}
	}
}

// TestKDkRefusesBadSettings: ε outside [0, ½) is refused with the key
// named, and KDk is one label codec, not to be combined with CAE.
func TestKDkRefusesBadSettings(t *testing.T) {
	for _, eps := range []float64{-0.1, 0.5, 0.65, math.NaN()} {
		if _, err := NewKDk(eps); err == nil || !strings.Contains(err.Error(), "kdk_eps") {
			t.Errorf("ε=%v: error %v, want one naming kdk_eps", eps, err)
		}
		if err := Check("none", Params{"kdk_eps": eps}); err == nil {
			t.Errorf("ε=%v accepted by the registry's check", eps)
		}
	}
	if err := Check("max_norm", Params{"kdk_eps": 0.2}); err != nil {
		t.Errorf("KDk with max_norm: %v", err)
	}
	if _, err := BuildCodec(Params{"kdk_eps": 0.2, "cae_lambda": 1}, 1); err == nil || !strings.Contains(err.Error(), "combine at most one") {
		t.Errorf("KDk with CAE: error %v", err)
	}
}
