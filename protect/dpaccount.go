package protect

import "math"

// dpOrders are the Rényi orders α over which [RDPToDP] minimises: 1.1 to
// 10.9 by 0.1, every integer from 11 to 64, then a coarser grid up to
// 4096 for weak compositions (large σ, few releases), whose best order is
// large. Any order gives a valid bound; the grid only decides how close to
// the best one it is.
var dpOrders = func() []float64 {
	var o []float64
	for x := 11; x < 110; x++ {
		o = append(o, float64(x)/10)
	}
	for a := 11; a <= 64; a++ {
		o = append(o, float64(a))
	}
	return append(o, 80, 96, 128, 160, 192, 256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096)
}()

// GaussianRDP returns the Rényi divergence of order alpha > 1 between
// two Gaussians N(0, s²I) and N(μ, s²I) with ‖μ‖ = Δ, given the ratio
// r = Δ/s: α·r²/2 (Mironov 2017, Prop. 7), the RDP of one release of the
// Gaussian mechanism of sensitivity Δ and noise standard deviation s.
func GaussianRDP(alpha, r float64) float64 { return alpha * r * r / 2 }

// RDPToDP converts a mechanism's Rényi DP curve rdp(α) into (ε, δ)-DP at
// δ ∈ (0, 1) by ε = min over the orders α of rdp(α) + log(1/δ)/(α − 1)
// (Mironov 2017, Prop. 3). It returns ε and the order that attains it.
func RDPToDP(rdp func(alpha float64) float64, delta float64) (eps, order float64) {
	eps = math.Inf(1)
	logInv := -math.Log(delta)
	for _, a := range dpOrders {
		if e := rdp(a) + logInv/(a-1); e < eps {
			eps, order = e, a
		}
	}
	return max(eps, 0), order
}
