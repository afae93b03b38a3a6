// Single-precision GEMM micro-kernels for amd64, written by hand.
//
// Every kernel computes one MR×NR tile of C:
//
//	acc[i][j] = Σ_p A(i, p) · B(p, j)   for p < k
//	C[i][j]   = alpha·acc[i][j]                  (load == 0: C is not read)
//	C[i][j]   = alpha·acc[i][j] + beta·S[i][j]   (load != 0)
//
// where S[i][j] = src[i·lds + j]: C itself (src = c, lds = ldc), or one
// row read for every row of the tile (lds = 0: a bias broadcast, so C
// is written without being read first).
//
// B is a panel of k rows of NR consecutive floats, bs floats apart.
// A is read in one of two layouts:
//   - "cols" kernels: A(i, p) = a[p·as + i], k steps of MR consecutive
//     floats (a packed panel, or a transposed A read in place);
//   - "rows" kernels: A(i, p) = a[i·as + p], MR rows of a row-major A read
//     in place.
// Strides and ldc are in floats. The sums run over p in order, one fused
// multiply-add per step, so a tile's result depends only on its inputs.

#include "textflag.h"

// ---------------------------------------------------------------- AVX-512
// Tile 8×32: accumulators Z0–Z15 (row r in Z(2r), Z(2r+1)), B in Z16–Z17,
// broadcasts of A in Z18–Z25, alpha in Z26, beta in Z27.

#define B512 \
	VMOVUPS (DI), Z16; \
	VMOVUPS 64(DI), Z17

#define FMA512(src, bc, acc0, acc1) \
	VBROADCASTSS src, bc; \
	VFMADD231PS Z16, bc, acc0; \
	VFMADD231PS Z17, bc, acc1

#define ZERO512 \
	VPXORD Z0, Z0, Z0; VPXORD Z1, Z1, Z1; VPXORD Z2, Z2, Z2; VPXORD Z3, Z3, Z3; \
	VPXORD Z4, Z4, Z4; VPXORD Z5, Z5, Z5; VPXORD Z6, Z6, Z6; VPXORD Z7, Z7, Z7; \
	VPXORD Z8, Z8, Z8; VPXORD Z9, Z9, Z9; VPXORD Z10, Z10, Z10; VPXORD Z11, Z11, Z11; \
	VPXORD Z12, Z12, Z12; VPXORD Z13, Z13, Z13; VPXORD Z14, Z14, Z14; VPXORD Z15, Z15, Z15

#define SCALE512 \
	VMULPS Z26, Z0, Z0; VMULPS Z26, Z1, Z1; VMULPS Z26, Z2, Z2; VMULPS Z26, Z3, Z3; \
	VMULPS Z26, Z4, Z4; VMULPS Z26, Z5, Z5; VMULPS Z26, Z6, Z6; VMULPS Z26, Z7, Z7; \
	VMULPS Z26, Z8, Z8; VMULPS Z26, Z9, Z9; VMULPS Z26, Z10, Z10; VMULPS Z26, Z11, Z11; \
	VMULPS Z26, Z12, Z12; VMULPS Z26, Z13, Z13; VMULPS Z26, Z14, Z14; VMULPS Z26, Z15, Z15

#define ST512(acc0, acc1) \
	VMOVUPS acc0, (DX); \
	VMOVUPS acc1, 64(DX); \
	ADDQ R10, DX

#define LDST512(acc0, acc1) \
	VFMADD231PS (BX), Z27, acc0; \
	VFMADD231PS 64(BX), Z27, acc1; \
	VMOVUPS acc0, (DX); \
	VMOVUPS acc1, 64(DX); \
	ADDQ R10, DX; \
	ADDQ R9, BX

// Epilogue shared by both AVX-512 kernels.
#define LDSTALL512 \
	LDST512(Z0, Z1); \
	LDST512(Z2, Z3); \
	LDST512(Z4, Z5); \
	LDST512(Z6, Z7); \
	LDST512(Z8, Z9); \
	LDST512(Z10, Z11); \
	LDST512(Z12, Z13); \
	LDST512(Z14, Z15)

#define STALL512 \
	ST512(Z0, Z1); \
	ST512(Z2, Z3); \
	ST512(Z4, Z5); \
	ST512(Z6, Z7); \
	ST512(Z8, Z9); \
	ST512(Z10, Z11); \
	ST512(Z12, Z13); \
	ST512(Z14, Z15)

#define END512 \
	VBROADCASTSS alpha+56(FP), Z26; \
	VBROADCASTSS beta+60(FP), Z27; \
	SCALE512; \
	MOVQ c+40(FP), DX; \
	MOVQ ldc+48(FP), R10; \
	SHLQ $2, R10; \
	MOVQ src+72(FP), BX; \
	MOVQ lds+80(FP), R9; \
	SHLQ $2, R9; \
	MOVQ load+64(FP), AX; \
	TESTQ AX, AX

// func kern512Cols(k int, a *float32, as int, b *float32, bs int, c *float32, ldc int, alpha, beta float32, load int, src *float32, lds int)
TEXT ·kern512Cols(SB), NOSPLIT, $0-88
	MOVQ k+0(FP), CX
	MOVQ a+8(FP), SI
	MOVQ as+16(FP), R8
	SHLQ $2, R8
	MOVQ b+24(FP), DI
	MOVQ bs+32(FP), R9
	SHLQ $2, R9
	ZERO512

loop:
	B512
	FMA512(0(SI), Z18, Z0, Z1)
	FMA512(4(SI), Z19, Z2, Z3)
	FMA512(8(SI), Z20, Z4, Z5)
	FMA512(12(SI), Z21, Z6, Z7)
	FMA512(16(SI), Z22, Z8, Z9)
	FMA512(20(SI), Z23, Z10, Z11)
	FMA512(24(SI), Z24, Z12, Z13)
	FMA512(28(SI), Z25, Z14, Z15)
	ADDQ R8, SI
	ADDQ R9, DI
	DECQ CX
	JNZ  loop
	END512
	JZ   loopstore
	LDSTALL512
	VZEROUPPER
	RET

loopstore:
	STALL512
	VZEROUPPER
	RET

// func kern512Rows(k int, a *float32, as int, b *float32, bs int, c *float32, ldc int, alpha, beta float32, load int, src *float32, lds int)
TEXT ·kern512Rows(SB), NOSPLIT, $0-88
	MOVQ k+0(FP), CX
	MOVQ a+8(FP), SI
	MOVQ as+16(FP), R11
	SHLQ $2, R11
	LEAQ (R11)(R11*2), R12
	LEAQ (SI)(R11*4), R13
	MOVQ b+24(FP), DI
	MOVQ bs+32(FP), R9
	SHLQ $2, R9
	ZERO512

rloop:
	B512
	FMA512((SI), Z18, Z0, Z1)
	FMA512((SI)(R11*1), Z19, Z2, Z3)
	FMA512((SI)(R11*2), Z20, Z4, Z5)
	FMA512((SI)(R12*1), Z21, Z6, Z7)
	FMA512((R13), Z22, Z8, Z9)
	FMA512((R13)(R11*1), Z23, Z10, Z11)
	FMA512((R13)(R11*2), Z24, Z12, Z13)
	FMA512((R13)(R12*1), Z25, Z14, Z15)
	ADDQ $4, SI
	ADDQ $4, R13
	ADDQ R9, DI
	DECQ CX
	JNZ  rloop
	END512
	JZ   rloopstore
	LDSTALL512
	VZEROUPPER
	RET

rloopstore:
	STALL512
	VZEROUPPER
	RET


// ---------------------------------------------------------------- AVX2+FMA
// Tile 6×16: accumulators Y0–Y11 (row r in Y(2r), Y(2r+1)), B in Y12–Y13,
// broadcasts of A alternate between Y14 and Y15; after the loop alpha is
// in Y14 and beta in Y15.

#define B256 \
	VMOVUPS (DI), Y12; \
	VMOVUPS 32(DI), Y13

#define FMA256(src, bc, acc0, acc1) \
	VBROADCASTSS src, bc; \
	VFMADD231PS Y12, bc, acc0; \
	VFMADD231PS Y13, bc, acc1

#define ZERO256 \
	VXORPS Y0, Y0, Y0; VXORPS Y1, Y1, Y1; VXORPS Y2, Y2, Y2; VXORPS Y3, Y3, Y3; \
	VXORPS Y4, Y4, Y4; VXORPS Y5, Y5, Y5; VXORPS Y6, Y6, Y6; VXORPS Y7, Y7, Y7; \
	VXORPS Y8, Y8, Y8; VXORPS Y9, Y9, Y9; VXORPS Y10, Y10, Y10; VXORPS Y11, Y11, Y11

#define SCALE256 \
	VMULPS Y14, Y0, Y0; VMULPS Y14, Y1, Y1; VMULPS Y14, Y2, Y2; VMULPS Y14, Y3, Y3; \
	VMULPS Y14, Y4, Y4; VMULPS Y14, Y5, Y5; VMULPS Y14, Y6, Y6; VMULPS Y14, Y7, Y7; \
	VMULPS Y14, Y8, Y8; VMULPS Y14, Y9, Y9; VMULPS Y14, Y10, Y10; VMULPS Y14, Y11, Y11

#define ST256(acc0, acc1) \
	VMOVUPS acc0, (DX); \
	VMOVUPS acc1, 32(DX); \
	ADDQ R10, DX

#define LDST256(acc0, acc1) \
	VFMADD231PS (BX), Y15, acc0; \
	VFMADD231PS 32(BX), Y15, acc1; \
	VMOVUPS acc0, (DX); \
	VMOVUPS acc1, 32(DX); \
	ADDQ R10, DX; \
	ADDQ R9, BX

#define LDSTALL256 \
	LDST256(Y0, Y1); \
	LDST256(Y2, Y3); \
	LDST256(Y4, Y5); \
	LDST256(Y6, Y7); \
	LDST256(Y8, Y9); \
	LDST256(Y10, Y11)

#define STALL256 \
	ST256(Y0, Y1); \
	ST256(Y2, Y3); \
	ST256(Y4, Y5); \
	ST256(Y6, Y7); \
	ST256(Y8, Y9); \
	ST256(Y10, Y11)

#define END256 \
	VBROADCASTSS alpha+56(FP), Y14; \
	VBROADCASTSS beta+60(FP), Y15; \
	SCALE256; \
	MOVQ c+40(FP), DX; \
	MOVQ ldc+48(FP), R10; \
	SHLQ $2, R10; \
	MOVQ src+72(FP), BX; \
	MOVQ lds+80(FP), R9; \
	SHLQ $2, R9; \
	MOVQ load+64(FP), AX; \
	TESTQ AX, AX

// func kern256Cols(k int, a *float32, as int, b *float32, bs int, c *float32, ldc int, alpha, beta float32, load int, src *float32, lds int)
TEXT ·kern256Cols(SB), NOSPLIT, $0-88
	MOVQ k+0(FP), CX
	MOVQ a+8(FP), SI
	MOVQ as+16(FP), R8
	SHLQ $2, R8
	MOVQ b+24(FP), DI
	MOVQ bs+32(FP), R9
	SHLQ $2, R9
	ZERO256

loop:
	B256
	FMA256(0(SI), Y14, Y0, Y1)
	FMA256(4(SI), Y15, Y2, Y3)
	FMA256(8(SI), Y14, Y4, Y5)
	FMA256(12(SI), Y15, Y6, Y7)
	FMA256(16(SI), Y14, Y8, Y9)
	FMA256(20(SI), Y15, Y10, Y11)
	ADDQ R8, SI
	ADDQ R9, DI
	DECQ CX
	JNZ  loop
	END256
	JZ   loopstore
	LDSTALL256
	VZEROUPPER
	RET

loopstore:
	STALL256
	VZEROUPPER
	RET

// func kern256Rows(k int, a *float32, as int, b *float32, bs int, c *float32, ldc int, alpha, beta float32, load int, src *float32, lds int)
TEXT ·kern256Rows(SB), NOSPLIT, $0-88
	MOVQ k+0(FP), CX
	MOVQ a+8(FP), SI
	MOVQ as+16(FP), R11
	SHLQ $2, R11
	LEAQ (R11)(R11*2), R12
	LEAQ (SI)(R12*1), R13
	MOVQ b+24(FP), DI
	MOVQ bs+32(FP), R9
	SHLQ $2, R9
	ZERO256

rloop:
	B256
	FMA256((SI), Y14, Y0, Y1)
	FMA256((SI)(R11*1), Y15, Y2, Y3)
	FMA256((SI)(R11*2), Y14, Y4, Y5)
	FMA256((R13), Y15, Y6, Y7)
	FMA256((R13)(R11*1), Y14, Y8, Y9)
	FMA256((R13)(R11*2), Y15, Y10, Y11)
	ADDQ $4, SI
	ADDQ $4, R13
	ADDQ R9, DI
	DECQ CX
	JNZ  rloop
	END256
	JZ   rloopstore
	LDSTALL256
	VZEROUPPER
	RET

rloopstore:
	STALL256
	VZEROUPPER
	RET


// func pack32(dst, src *float32, ldb, kc int)
// kc rows of 32 floats (two 512-bit moves each), ldb floats apart, to dst
// contiguously.
TEXT ·pack32(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ ldb+16(FP), DX
	SHLQ $2, DX
	MOVQ kc+24(FP), CX

p32loop:
	VMOVUPS (SI), Z0
	VMOVUPS 64(SI), Z1
	VMOVUPS Z0, (DI)
	VMOVUPS Z1, 64(DI)
	ADDQ    DX, SI
	ADDQ    $128, DI
	DECQ    CX
	JNZ     p32loop
	VZEROUPPER
	RET

// func pack16(dst, src *float32, ldb, kc int)
// kc rows of 16 floats (two 256-bit moves each), ldb floats apart, to dst
// contiguously.
TEXT ·pack16(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ ldb+16(FP), DX
	SHLQ $2, DX
	MOVQ kc+24(FP), CX

p16loop:
	VMOVUPS (SI), Y0
	VMOVUPS 32(SI), Y1
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	ADDQ    DX, SI
	ADDQ    $64, DI
	DECQ    CX
	JNZ     p16loop
	VZEROUPPER
	RET
