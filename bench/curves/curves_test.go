// Package curves times one scalar multiplication on the PSI's curve
// (ristretto255, gtank/ristretto255, what package psi uses) against FourQ
// (cloudflare/circl's ecc/fourq), the curve of SecretFlow's fastest ECDH
// PSI. It is a module of its own so that splitguard does not depend on
// circl for a measurement: run it with
//
//	cd bench/curves && go test -run '^$' -bench . -benchtime 20000x -cpu 1 -count 6
//
// docs/SCALING.md ("A faster curve?") gives the figures and why FourQ is
// not adopted.
package curves

import (
	"crypto/sha512"
	"testing"

	"github.com/cloudflare/circl/ecc/fourq"
	"github.com/gtank/ristretto255"
)

func BenchmarkRistretto255ScalarMult(b *testing.B) {
	h := sha512.Sum512([]byte("splitguard"))
	p := ristretto255.NewElement().FromUniformBytes(h[:])
	s := ristretto255.NewScalar().FromUniformBytes(h[:])
	q := ristretto255.NewElement()
	for b.Loop() {
		q.ScalarMult(s, p)
	}
}

func BenchmarkFourQScalarMult(b *testing.B) {
	var k [fourq.Size]byte
	for i := range k {
		k[i] = byte(i*37 + 1)
	}
	k[fourq.Size-1] &= 0x0f // below the group order
	var p, q fourq.Point
	p.ScalarBaseMult(&k)
	for b.Loop() {
		q.ScalarMult(&k, &p)
	}
	if !q.IsOnCurve() {
		b.Fatal("FourQ: the product is not on the curve")
	}
}
