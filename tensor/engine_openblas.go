//go:build openblas

package tensor

/*
#cgo LDFLAGS: -lopenblas
#include <stdlib.h>

// Declared here rather than through cblas.h, whose location differs
// between distributions; the ABI is OpenBLAS's standard CBLAS one.
enum { sgRowMajor = 101, sgNoTrans = 111, sgTrans = 112 };
void cblas_sgemm(int order, int transA, int transB, int m, int n, int k,
                 float alpha, const float *a, int lda, const float *b, int ldb,
                 float beta, float *c, int ldc);
void openblas_set_num_threads(int n);

static void sg_sgemm(int ta, int tb, int m, int n, int k, float alpha,
                     const float *a, int lda, const float *b, int ldb,
                     float beta, float *c, int ldc) {
	cblas_sgemm(sgRowMajor, ta ? sgTrans : sgNoTrans, tb ? sgTrans : sgNoTrans,
	            m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}
*/
import "C"

import (
	"os"
	"unsafe"
)

func defaultEngine() Engine {
	// At splitguard's sizes a second OpenBLAS thread gains nothing and
	// competes with Go's own goroutines (ENGINE-NOTES.md); keep one unless
	// the user asked for more.
	if os.Getenv("OPENBLAS_NUM_THREADS") == "" {
		C.openblas_set_num_threads(1)
	}
	return OpenBLASEngine{}
}

// OpenBLASEngine runs products through OpenBLAS's cblas_sgemm.
type OpenBLASEngine struct{}

// Name implements Engine.
func (OpenBLASEngine) Name() string { return "openblas" }

// Sgemm implements Engine.
func (OpenBLASEngine) Sgemm(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	C.sg_sgemm(cbool(transA), cbool(transB), C.int(m), C.int(n), C.int(k), C.float(alpha),
		(*C.float)(unsafe.Pointer(&a[0])), C.int(lda), (*C.float)(unsafe.Pointer(&b[0])), C.int(ldb),
		C.float(beta), (*C.float)(unsafe.Pointer(&c[0])), C.int(ldc))
}

func cbool(b bool) C.int {
	if b {
		return 1
	}
	return 0
}
