//go:build !openblas

package tensor

// defaultEngine is the fastest pure-Go engine for this CPU: the assembly
// micro-kernels where the CPU has AVX-512 or AVX2+FMA, gonum elsewhere.
func defaultEngine() Engine {
	if es := simdEngines(); len(es) > 0 {
		return es[0]
	}
	return GonumEngine{}
}
