package protect

import (
	"errors"
	"math"
	"math/rand/v2"
	"strconv"

	"github.com/splitguard/splitguard/configkey"
	"github.com/splitguard/splitguard/tensor"
)

func init() {
	Register(Spec{Name: "sparsify", Color: 0x7f7f7f, Help: "gradient sparsification: zero the smallest share p of each gradient row (or of the batch)",
		Params: []Param{
			{Key: "sparsify_p", Symbol: "p", Help: "sparsify: share p of the entries set to zero, the smallest in magnitude", Min: 0, Max: 1, MaxOpen: true},
			{Key: "sparsify_batch", Symbol: "batch", Int: true, Help: "sparsify: 1 ranks the entries of the whole batch together, 0 (default) each row on its own", Min: 0, Max: 1},
		},
		Describe: func(p Params) ([]string, float64) {
			parts := []string{"p=" + strconv.FormatFloat(p.Get("sparsify_p"), 'g', 4, 64)}
			if p.Get("sparsify_batch") == 1 {
				parts = append(parts, "batch")
			}
			return parts, p.Get("sparsify_p")
		},
		New: func(p Params) (Protector, error) {
			if !p.Has("sparsify_p") {
				return nil, configkey.Keyed(errors.New("sparsify needs its share p (key sparsify_p) in [0, 1)"), "sparsify_p")
			}
			return &Sparsify{P: p.Get("sparsify_p"), Batch: p.Get("sparsify_batch") == 1, stats: Stats{}}, nil
		}})
}

// Sparsify is gradient sparsification (Aji and Heafield's top-k
// compression, used as a label defence by Fu et al. and in VFLAIR): of each
// group of n entries, the m = ⌊p·n⌋ smallest in magnitude are set to zero
// and the others are sent unchanged. A group is one gradient row (one
// example's gradient; the default) or, with Batch, the whole B×d gradient
// (VFLAIR's choice: one magnitude threshold for the batch). p·n is rounded
// to 9 significant digits before the floor, so that p = 0.29 of 100
// entries drops 29 and not 28. Ties in magnitude are broken by position:
// among equal magnitudes the earlier entry is dropped first, so exactly m
// entries are zeroed even when several share the threshold.
//
// Stats: kept_norm2, the share ‖g̃‖²/‖g‖² of the squared gradient norm
// that was sent (1 for a zero gradient).
type Sparsify struct {
	P     float64 // share dropped, in [0, 1)
	Batch bool    // rank the whole batch together instead of each row
	stats Stats
	mags  []float32
}

// Name returns "sparsify".
func (*Sparsify) Name() string { return "sparsify" }

// Dropped returns the number of entries Sparsify zeroes in a group of n:
// ⌊p·n⌋, with p·n rounded to 9 significant digits first.
func (s *Sparsify) Dropped(n int) int {
	x := s.P * float64(n)
	if r := math.Round(x); math.Abs(x-r) <= 1e-9*math.Max(1, x) {
		x = r
	}
	return min(int(math.Floor(x)), n)
}

// Protect zeroes the smallest entries of each row (or of the batch).
func (s *Sparsify) Protect(b *Batch, out *tensor.Matrix, _ *rand.Rand) (Stats, error) {
	if err := checkBatch("sparsify", b, out, false, false); err != nil {
		return nil, err
	}
	g := b.Grad
	copy(out.Data, g.Data)
	if s.Batch {
		s.drop(out.Data)
	} else {
		for i := range out.Rows {
			s.drop(out.Row(i))
		}
	}
	all, kept := rowNorm2(g.Data), rowNorm2(out.Data)
	s.stats["kept_norm2"] = 1
	if all > 0 {
		s.stats["kept_norm2"] = kept / all
	}
	return s.stats, nil
}

// drop zeroes the Dropped(len(v)) smallest-magnitude entries of v in
// place: the m-th smallest magnitude t is found by selection (linear time),
// entries below t are zeroed, and then entries equal to t from the first
// on until m are.
func (s *Sparsify) drop(v []float32) {
	m := s.Dropped(len(v))
	if m == 0 {
		return
	}
	s.mags = s.mags[:0]
	for _, x := range v {
		s.mags = append(s.mags, abs32(x))
	}
	t := selectNth(s.mags, m-1)
	below := 0
	for k, x := range v {
		if abs32(x) < t {
			v[k] = 0
			below++
		}
	}
	for k, x := range v {
		if below == m {
			break
		}
		if abs32(x) == t { // ties at the threshold: the earliest first
			v[k] = 0
			below++
		}
	}
}

func abs32(x float32) float32 { return math.Float32frombits(math.Float32bits(x) &^ (1 << 31)) }

// selectNth reorders a so that a[n] is the value it would have sorted and
// returns it (Hoare's selection with a median-of-three pivot).
func selectNth(a []float32, n int) float32 {
	lo, hi := 0, len(a)-1
	for lo < hi {
		mid := lo + (hi-lo)/2
		if a[mid] < a[lo] {
			a[mid], a[lo] = a[lo], a[mid]
		}
		if a[hi] < a[lo] {
			a[hi], a[lo] = a[lo], a[hi]
		}
		if a[hi] < a[mid] {
			a[hi], a[mid] = a[mid], a[hi]
		}
		p := a[mid]
		i, j := lo, hi
		for i <= j {
			for a[i] < p {
				i++
			}
			for a[j] > p {
				j--
			}
			if i <= j {
				a[i], a[j] = a[j], a[i]
				i++
				j--
			}
		}
		switch {
		case n <= j:
			hi = j
		case n >= i:
			lo = i
		default:
			return a[n]
		}
	}
	return a[n]
}
