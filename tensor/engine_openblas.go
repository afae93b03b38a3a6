//go:build openblas

package tensor

/*
#cgo LDFLAGS: -ldl
#include <dlfcn.h>
#include <stddef.h>

// OpenBLAS is loaded with dlopen rather than linked, so that splitguard can
// choose its kernel (OPENBLAS_CORETYPE, read once by the library's
// constructor) before the library initialises. The functions are declared
// here rather than through cblas.h, whose location differs between
// distributions; the ABI is OpenBLAS's standard CBLAS one.
enum { sgRowMajor = 101, sgNoTrans = 111, sgTrans = 112 };
typedef void (*sg_sgemm_fn)(int, int, int, int, int, int, float, const float *, int,
                            const float *, int, float, float *, int);
static sg_sgemm_fn sg_cblas_sgemm;
static void (*sg_set_threads)(int);
static char *(*sg_corename)(void);

// sg_open loads OpenBLAS and resolves its functions; it returns NULL or
// the reason it failed.
static const char *sg_open(void) {
	void *h = dlopen("libopenblas.so.0", RTLD_NOW | RTLD_LOCAL);
	if (h == NULL) h = dlopen("libopenblas.so", RTLD_NOW | RTLD_LOCAL);
	if (h == NULL) return dlerror();
	sg_cblas_sgemm = (sg_sgemm_fn)dlsym(h, "cblas_sgemm");
	sg_set_threads = (void (*)(int))dlsym(h, "openblas_set_num_threads");
	sg_corename = (char *(*)(void))dlsym(h, "openblas_get_corename");
	if (sg_cblas_sgemm == NULL || sg_set_threads == NULL || sg_corename == NULL)
		return "libopenblas lacks cblas_sgemm, openblas_set_num_threads or openblas_get_corename";
	return NULL;
}

static void sg_threads(int n) { sg_set_threads(n); }
static const char *sg_core(void) { return sg_corename(); }

static void sg_sgemm(int ta, int tb, int m, int n, int k, float alpha,
                     const float *a, int lda, const float *b, int ldb,
                     float beta, float *c, int ldc) {
	sg_cblas_sgemm(sgRowMajor, ta ? sgTrans : sgNoTrans, tb ? sgTrans : sgNoTrans,
	               m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}
*/
import "C"

import (
	"fmt"
	"os"
	"strings"
	"unsafe"

	"golang.org/x/sys/cpu"

	"github.com/splitguard/splitguard/internal/par"
)

// openBLASCore is the kernel family OpenBLAS runs, as it names it
// ("SkylakeX", "Haswell", ...), lower-cased.
var openBLASCore string

func defaultEngine() Engine {
	// OpenBLAS picks its kernels from the CPU model, and Debian's 0.3.21
	// does not know recent AVX-512 CPUs (AMD Zen 4/5), which then get the
	// AVX2 (Haswell) kernels, about 1.5× slower here (docs/PERFORMANCE.md, "Before the project").
	// Where the CPU has the AVX-512 subsets of the SkylakeX kernels, ask
	// for them, unless the user chose a core type.
	forced := false
	if os.Getenv("OPENBLAS_CORETYPE") == "" && cpu.X86.HasAVX512F && cpu.X86.HasAVX512BW &&
		cpu.X86.HasAVX512DQ && cpu.X86.HasAVX512VL && cpu.X86.HasAVX512CD {
		os.Setenv("OPENBLAS_CORETYPE", "SkylakeX")
		forced = true
	}
	msg := C.sg_open()
	if forced {
		os.Unsetenv("OPENBLAS_CORETYPE")
	}
	if msg != nil {
		panic(fmt.Sprintf("tensor: this binary was built with the openblas tag, but OpenBLAS cannot be loaded: %s", C.GoString(msg)))
	}
	openBLASCore = strings.ToLower(C.GoString(C.sg_core()))
	// At splitguard's sizes a second OpenBLAS thread gains nothing and
	// competes with Go's own goroutines (docs/PERFORMANCE.md, "Before the project"); keep one unless
	// the user asked for more.
	if os.Getenv("OPENBLAS_NUM_THREADS") == "" {
		C.sg_threads(1)
	}
	return OpenBLASEngine{}
}

// OpenBLASEngine runs products through OpenBLAS's cblas_sgemm.
//
// OpenBLAS runs single-threaded here (see defaultEngine): its own threads
// synchronise too often to pay at splitguard's sizes. Instead a large
// product is cut into two halves along the longer side of C, and the two
// halves run as concurrent single-threaded calls (internal/par).
// OpenBLAS's kernels may round a half's entries differently from a whole
// call's, so the cut is fixed by the shapes alone: it is
// made with one core as well (the halves then run one after the other),
// and results are bit-identical whatever GOMAXPROCS and timing are.
type OpenBLASEngine struct{}

// Name implements Engine: "openblas-" and the kernel family OpenBLAS
// runs, e.g. "openblas-skylakex".
func (OpenBLASEngine) Name() string { return "openblas-" + openBLASCore }

// splitFlops is the size (m·n·k) from which Sgemm cuts a product in two;
// below it the goroutine hand-off costs more than the second core gains.
const splitFlops = 1 << 20

// Sgemm implements Engine.
func (OpenBLASEngine) Sgemm(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	if m*n*k < splitFlops || max(m, n) < 32 {
		obSgemm(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
		return
	}
	j := sgemmJob{transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc}
	if m >= n {
		h := m / 2 &^ 15 // rows of C in the first half, a multiple of the kernels' blocking
		j.m, j.c = m-h, c[h*ldc:]
		if transA {
			j.a = a[h:]
		} else {
			j.a = a[h*lda:]
		}
		m = h
	} else {
		h := n / 2 &^ 15 // columns of C in the first half
		j.n, j.c = n-h, c[h:]
		if transB {
			j.b = b[h*ldb:]
		} else {
			j.b = b[h:]
		}
		n = h
	}
	// The halves run at once on internal/par's workers, or one after the
	// other when none is free (or GOMAXPROCS is 1).
	par.Do(2, func(p int) {
		if p == 0 {
			obSgemm(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
			return
		}
		obSgemm(j.transA, j.transB, j.m, j.n, j.k, j.alpha, j.a, j.lda, j.b, j.ldb, j.beta, j.c, j.ldc)
	})
}

// sgemmJob is the second half of a split product.
type sgemmJob struct {
	transA, transB bool
	m, n, k        int
	alpha          float32
	a              []float32
	lda            int
	b              []float32
	ldb            int
	beta           float32
	c              []float32
	ldc            int
}

// obSgemm is one cblas_sgemm call.
func obSgemm(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
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
