package attack

import (
	"math"
	"math/rand/v2"
	"slices"

	"github.com/splitguard/splitguard/internal/buf"
)

// spectralComponentsMax is the largest number of components the spectral
// attack projects on.
const spectralComponentsMax = 3

// components scores the batch on the top a.Components right singular
// vectors of the centred batch a.centred, whose first, a.v, topDirection
// found: the further directions by power iteration on EᵀE through E
// (w ← Eᵀ(Ew), made orthogonal to the directions before it, from a fixed
// pseudo-random start, stopped like topDirection's); the rows are
// projected on all of them and each component is scaled to unit deviation
// (otherwise the first, of the largest variance, decides every split);
// the projections are split into two clusters by Lloyd's 2-means, started
// from the exact 1-D 2-means split of the component whose split removes
// the most within-cluster squares. The positive cluster is the smaller one
// when minority is set and the sizes differ, else the one whose rows have
// the larger mean norm; a row's score is its projection on the positive
// centroid minus the negative one.
func (a *Spectral) components(n int, minority bool, scores []float64) {
	d := a.centred.Cols
	k := min(a.Components, spectralComponentsMax, d, n)
	a.dirs = buf.Grow(a.dirs, k*d)
	copy(a.dirs[:d], a.v)
	a.ew = buf.Grow(a.ew, n)
	a.w2 = buf.Grow(a.w2, d)
	a.w3 = buf.Grow(a.w3, d)
	for c := 1; c < k; c++ {
		r := rand.New(rand.NewPCG(uint64(d), spectralStream+uint64(c)))
		for j := range a.w2 {
			a.w2[j] = r.NormFloat64()
		}
		a.orthogonal(a.w2, c, d)
		if normalise(a.w2) == 0 {
			k = c
			break
		}
		for range spectralMaxIter {
			if n >= d {
				// topDirection left C = EᵀE (d×d) in a.c64: d² per
				// iteration instead of 2nd.
				symMatVec(a.w3, a.c64[:d*d], a.w2)
			} else {
				a.gram(a.w3, a.w2, n, d)
			}
			var lambda, res float64
			for j := range d {
				lambda += a.w3[j] * a.w2[j]
			}
			for j := range d {
				e := a.w3[j] - lambda*a.w2[j]
				res += e * e
			}
			a.orthogonal(a.w3, c, d)
			if normalise(a.w3) == 0 {
				break
			}
			a.w2, a.w3 = a.w3, a.w2
			if math.Sqrt(res) <= spectralTol*lambda {
				break
			}
		}
		copy(a.dirs[c*d:(c+1)*d], a.w2)
	}
	// Projections, n×k.
	a.proj = buf.Grow(a.proj, n*k)
	for i := range n {
		row := a.centred.Row(i)
		for c := range k {
			var s float64
			for j, e := range row {
				s += float64(e) * a.dirs[c*d+j]
			}
			a.proj[i*k+c] = s
		}
	}
	// Whiten: every component to unit deviation over the batch (a
	// component without spread is left 0).
	for c := range k {
		var ss float64
		for i := range n {
			ss += a.proj[i*k+c] * a.proj[i*k+c]
		}
		inv := 0.0
		if ss > 0 {
			inv = 1 / math.Sqrt(ss/float64(n))
		}
		for i := range n {
			a.proj[i*k+c] *= inv
		}
	}
	// Lloyd's 2-means, started from the best exact 1-D split of a single
	// component (the one removing the most within-cluster squares).
	bestC, bestGain, thr := -1, -1.0, 0.0
	a.sorted = buf.Grow(a.sorted, n)
	for c := range k {
		for i := range n {
			a.sorted[i] = a.proj[i*k+c]
		}
		slices.Sort(a.sorted)
		split, ok := TwoMeans1D(a.sorted)
		if !ok {
			continue
		}
		var lo, hi float64
		for _, v := range a.sorted[:split] {
			lo += v
		}
		for _, v := range a.sorted[split:] {
			hi += v
		}
		nl, nh := float64(split), float64(n-split)
		gap := hi/nh - lo/nl
		if gain := nl * nh / float64(n) * gap * gap; gain > bestGain {
			bestC, bestGain, thr = c, gain, (a.sorted[split-1]+a.sorted[split])/2
		}
	}
	if bestC < 0 {
		fill(scores, 0)
		return
	}
	a.cluster = buf.Grow(a.cluster, n)
	for i := range n {
		a.cluster[i] = a.proj[i*k+bestC] > thr
	}
	var cent [2][spectralComponentsMax]float64
	var size [2]int
	for range 100 {
		cent, size = [2][spectralComponentsMax]float64{}, [2]int{}
		for i := range n {
			g := b2i(a.cluster[i])
			size[g]++
			for c := range k {
				cent[g][c] += a.proj[i*k+c]
			}
		}
		if size[0] == 0 || size[1] == 0 {
			break
		}
		for g := range 2 {
			for c := range k {
				cent[g][c] /= float64(size[g])
			}
		}
		changed := false
		for i := range n {
			var d0, d1 float64
			for c := range k {
				p := a.proj[i*k+c]
				d0 += (p - cent[0][c]) * (p - cent[0][c])
				d1 += (p - cent[1][c]) * (p - cent[1][c])
			}
			if hi := d1 < d0; hi != a.cluster[i] {
				a.cluster[i], changed = hi, true
			}
		}
		if !changed {
			break
		}
	}
	if size[0] == 0 || size[1] == 0 {
		fill(scores, 0)
		return
	}
	var norm [2]float64
	for i := range n {
		var s float64
		for c := range k {
			s += a.proj[i*k+c] * a.proj[i*k+c]
		}
		norm[b2i(a.cluster[i])] += math.Sqrt(s)
	}
	pos := 1
	switch {
	case minority && size[1] < size[0]:
		pos = 1
	case minority && size[0] < size[1]:
		pos = 0
	case norm[0]/float64(size[0]) > norm[1]/float64(size[1]):
		pos = 0
	}
	for i := range n {
		var s float64
		for c := range k {
			s += a.proj[i*k+c] * (cent[pos][c] - cent[1-pos][c])
		}
		scores[i] = s
	}
}

// gram sets dst = Eᵀ(E·w) for the n×d centred batch E (used where the
// batch is narrower than the layer, n < d, and topDirection kept the n×n
// Gram matrix EEᵀ instead of EᵀE).
func (a *Spectral) gram(dst, w []float64, n, d int) {
	for i := range n {
		var s float64
		for j, e := range a.centred.Row(i) {
			s += float64(e) * w[j]
		}
		a.ew[i] = s
	}
	clear(dst)
	for i := range n {
		s := a.ew[i]
		for j, e := range a.centred.Row(i) {
			dst[j] += s * float64(e)
		}
	}
}

// orthogonal removes from w its components along the first c directions.
func (a *Spectral) orthogonal(w []float64, c, d int) {
	for p := range c {
		dir := a.dirs[p*d : (p+1)*d]
		s := dotF(w, dir)
		for j := range w {
			w[j] -= s * dir[j]
		}
	}
}

// b2i is 1 for true and 0 for false.
func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
