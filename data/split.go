package data

import (
	"fmt"
	"slices"
)

// Sampling and the train/test split are decided per example by a keyed
// hash of (seed, example ID), never by the order of rows or a shared
// random stream, so that two parties holding different columns of the
// same examples make the same decision without talking to each other.

// Keys that make the sampling and the split decisions independent.
const (
	sampleKey uint64 = 0x53414d504c450001 // "SAMPLE"
	testKey   uint64 = 0x5445535453504c02 // "TESTSPL"
	golden    uint64 = 0x9e3779b97f4a7c15
)

// mix64 is the SplitMix64 finaliser: a bijection of uint64 with good
// avalanche behaviour.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// unitHash maps (seed, key, id) to a number in [0, 1) that behaves like
// a uniform draw, independently for different keys or seeds.
func unitHash(seed, key, id uint64) float64 {
	h := mix64(mix64(seed^key*golden) ^ mix64(id+golden))
	return float64(h>>11) * 0x1p-53
}

// Assign reports whether the example with the given ID is in the sample
// (probability sample; sample ≥ 1 keeps every example) and, if so,
// whether it belongs to the test split (probability testFrac, decided
// independently of the sampling). The decision depends only on (seed, id),
// so any party can reproduce the split from the example IDs alone.
func Assign(seed, id uint64, sample, testFrac float64) (kept, test bool) {
	kept = sample >= 1 || unitHash(seed, sampleKey, id) < sample
	test = testFrac > 0 && unitHash(seed, testKey, id) < testFrac
	return kept, test
}

// hashBytes is 64-bit FNV-1a of b, started from the basis mixed with
// salt, then finalised with mix64 so that its low bits are usable for a
// modulus.
func hashBytes(salt uint64, b []byte) uint64 {
	h := uint64(14695981039346656037) ^ mix64(salt+golden)
	for _, c := range b {
		h ^= uint64(c)
		h *= 1099511628211
	}
	return mix64(h)
}

// HashID turns a non-numeric example ID into a uint64: FNV-1a (64 bit) of
// its bytes, finalised with SplitMix64. Generic CSV files with string IDs
// use it; two parties holding the same ID strings get the same IDs.
func HashID(id string) uint64 { return hashBytes(0, []byte(id)) }

// valKey makes the validation decision independent of the sampling and
// the test split.
const valKey uint64 = 0x56414c4944415403 // "VALIDAT"

// InValidation reports whether the training example with the given ID is
// held out for validation (probability valFrac, decided by a keyed hash
// of (seed, id) independently of the sampling and the test split), so
// that two parties holding different columns of the same examples agree
// on the validation rows without talking.
func InValidation(seed, id uint64, valFrac float64) bool {
	return valFrac > 0 && unitHash(seed, valKey, id) < valFrac
}

// SplitValidation divides d into the rows kept for training and the rows
// held out for validation (see [InValidation]), each in d's row order.
// With valFrac ≤ 0 it returns d itself and an empty validation set.
func SplitValidation(d *Dataset, seed uint64, valFrac float64) (train, val *Dataset) {
	var keep, hold []int
	for i, id := range d.IDs {
		if InValidation(seed, id, valFrac) {
			hold = append(hold, i)
		} else {
			keep = append(keep, i)
		}
	}
	if len(hold) == 0 {
		return d, SelectRows(d, nil)
	}
	return SelectRows(d, keep), SelectRows(d, hold)
}

// Concat returns the rows of a followed by the rows of b. Both must have
// the same columns (the same encoding); labels are kept when both have
// them.
func Concat(a, b *Dataset) (*Dataset, error) {
	out := &Dataset{IDs: append(slices.Clip(a.IDs), b.IDs...)}
	if a.Labels != nil && b.Labels != nil {
		out.Labels = append(slices.Clip(a.Labels), b.Labels...)
	}
	fa, fb := a.X, b.X
	if fa == nil && fb == nil {
		return out, nil // a party without features (the active party of an image run)
	}
	if fa == nil || fb == nil || fa.NumCat != fb.NumCat || fa.NumDense != fb.NumDense || (fa.Image == nil) != (fb.Image == nil) ||
		(fa.Image != nil && *fa.Image != *fb.Image) {
		return nil, fmt.Errorf("data: concatenating tables of %d+%d and %d+%d categorical+dense columns", fa.NumCat, fa.NumDense, fb.NumCat, fb.NumDense)
	}
	x := &Features{
		Rows: fa.Rows + fb.Rows, NumCat: fa.NumCat, Cardinality: fa.Cardinality, CatNames: fa.CatNames,
		NumDense: fa.NumDense, DenseNames: fa.DenseNames, Image: fa.Image,
		Cat:   append(slices.Clip(fa.Cat), fb.Cat...),
		Dense: append(slices.Clip(fa.Dense), fb.Dense...),
	}
	out.X = x
	return out, nil
}
