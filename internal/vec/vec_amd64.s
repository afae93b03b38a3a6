// Element-wise AVX2 loops of package vec, written by hand. Each handles n
// floats, n a positive multiple of 8, and does per lane exactly what the
// Go loop of the same name does per element (see vec.go).

#include "textflag.h"

// func anyNonFiniteAsm(x *float32, n int) bool
// A value is NaN or ±Inf exactly when its exponent bits are all ones.
TEXT ·anyNonFiniteAsm(SB), NOSPLIT, $0-17
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	MOVL $0x7f800000, AX
	VMOVD AX, X15
	VPBROADCASTD X15, Y15
	VPXOR Y14, Y14, Y14
	VPXOR Y13, Y13, Y13
	CMPQ CX, $32
	JLT  nf8

nf32:
	VPAND     (SI), Y15, Y0
	VPAND     32(SI), Y15, Y1
	VPAND     64(SI), Y15, Y2
	VPAND     96(SI), Y15, Y3
	VPCMPEQD  Y15, Y0, Y0
	VPCMPEQD  Y15, Y1, Y1
	VPCMPEQD  Y15, Y2, Y2
	VPCMPEQD  Y15, Y3, Y3
	VPOR      Y0, Y1, Y1
	VPOR      Y2, Y3, Y3
	VPOR      Y1, Y14, Y14
	VPOR      Y3, Y13, Y13
	ADDQ      $128, SI
	SUBQ      $32, CX
	CMPQ      CX, $32
	JGE       nf32

nf8:
	TESTQ     CX, CX
	JZ        nfdone
	VPAND     (SI), Y15, Y0
	VPCMPEQD  Y15, Y0, Y0
	VPOR      Y0, Y14, Y14
	ADDQ      $32, SI
	SUBQ      $8, CX
	JMP       nf8

nfdone:
	VPOR      Y13, Y14, Y14
	VPTEST    Y14, Y14
	SETNE     ret+16(FP)
	VZEROUPPER
	RET

// func reluAsm(y, x *float32, n int)
// y = x &^ (x >> 31, arithmetic): clears every value whose sign bit is set.
TEXT ·reluAsm(SB), NOSPLIT, $0-24
	MOVQ y+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ n+16(FP), CX
	CMPQ CX, $32
	JLT  relu8

relu32:
	VMOVDQU (SI), Y0
	VMOVDQU 32(SI), Y1
	VMOVDQU 64(SI), Y2
	VMOVDQU 96(SI), Y3
	VPSRAD  $31, Y0, Y4
	VPSRAD  $31, Y1, Y5
	VPSRAD  $31, Y2, Y6
	VPSRAD  $31, Y3, Y7
	VPANDN  Y0, Y4, Y0
	VPANDN  Y1, Y5, Y1
	VPANDN  Y2, Y6, Y2
	VPANDN  Y3, Y7, Y3
	VMOVDQU Y0, (DI)
	VMOVDQU Y1, 32(DI)
	VMOVDQU Y2, 64(DI)
	VMOVDQU Y3, 96(DI)
	ADDQ    $128, SI
	ADDQ    $128, DI
	SUBQ    $32, CX
	CMPQ    CX, $32
	JGE     relu32

relu8:
	TESTQ   CX, CX
	JZ      reludone
	VMOVDQU (SI), Y0
	VPSRAD  $31, Y0, Y4
	VPANDN  Y0, Y4, Y0
	VMOVDQU Y0, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DI
	SUBQ    $8, CX
	JMP     relu8

reludone:
	VZEROUPPER
	RET

// func reluGradAsm(dx, dy, y *float32, n int)
// dx = dy & ((0 − y) >> 31, arithmetic): keeps dy where y's bits are a
// positive int32.
TEXT ·reluGradAsm(SB), NOSPLIT, $0-32
	MOVQ dx+0(FP), DI
	MOVQ dy+8(FP), SI
	MOVQ y+16(FP), DX
	MOVQ n+24(FP), CX
	VPXOR Y15, Y15, Y15
	CMPQ CX, $32
	JLT  rg8

rg32:
	VPSUBD  (DX), Y15, Y0
	VPSUBD  32(DX), Y15, Y1
	VPSUBD  64(DX), Y15, Y2
	VPSUBD  96(DX), Y15, Y3
	VPSRAD  $31, Y0, Y0
	VPSRAD  $31, Y1, Y1
	VPSRAD  $31, Y2, Y2
	VPSRAD  $31, Y3, Y3
	VPAND   (SI), Y0, Y0
	VPAND   32(SI), Y1, Y1
	VPAND   64(SI), Y2, Y2
	VPAND   96(SI), Y3, Y3
	VMOVDQU Y0, (DI)
	VMOVDQU Y1, 32(DI)
	VMOVDQU Y2, 64(DI)
	VMOVDQU Y3, 96(DI)
	ADDQ    $128, SI
	ADDQ    $128, DI
	ADDQ    $128, DX
	SUBQ    $32, CX
	CMPQ    CX, $32
	JGE     rg32

rg8:
	TESTQ   CX, CX
	JZ      rgdone
	VPSUBD  (DX), Y15, Y0
	VPSRAD  $31, Y0, Y0
	VPAND   (SI), Y0, Y0
	VMOVDQU Y0, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DI
	ADDQ    $32, DX
	SUBQ    $8, CX
	JMP     rg8

rgdone:
	VZEROUPPER
	RET

// func adamAsm(w, grad, m, v *float32, n int, c *adamConsts)
// adamConsts: b1 +0, c1 +4, b2 +8, c2 +12, eps +16, step +20, vScale +24.
TEXT ·adamAsm(SB), NOSPLIT, $0-48
	MOVQ w+0(FP), DI
	MOVQ grad+8(FP), SI
	MOVQ m+16(FP), R8
	MOVQ v+24(FP), R9
	MOVQ n+32(FP), CX
	MOVQ c+40(FP), AX
	VBROADCASTSS 0(AX), Y8   // b1
	VBROADCASTSS 4(AX), Y9   // c1
	VBROADCASTSS 8(AX), Y10  // b2
	VBROADCASTSS 12(AX), Y11 // c2
	VBROADCASTSS 16(AX), Y12 // eps
	VBROADCASTSS 20(AX), Y13 // step
	VBROADCASTSS 24(AX), Y14 // vScale

adam8:
	VMOVUPS (SI), Y0          // g
	VMULPS  (R8), Y8, Y1      // b1·m
	VMULPS  Y0, Y9, Y2        // c1·g
	VADDPS  Y2, Y1, Y1        // m' = b1·m + c1·g
	VMULPS  (R9), Y10, Y3     // b2·v
	VMULPS  Y0, Y11, Y4       // c2·g
	VMULPS  Y0, Y4, Y4        // (c2·g)·g
	VADDPS  Y4, Y3, Y3        // v' = b2·v + (c2·g)·g
	VMOVUPS Y1, (R8)
	VMOVUPS Y3, (R9)
	VSQRTPS Y3, Y5            // √v'
	VMULPS  Y14, Y5, Y5       // √v'·vScale
	VADDPS  Y12, Y5, Y5       // + eps
	VMULPS  Y1, Y13, Y6       // step·m'
	VDIVPS  Y5, Y6, Y6        // (step·m') / (√v'·vScale + eps)
	VMOVUPS (DI), Y7
	VSUBPS  Y6, Y7, Y7        // w − …
	VMOVUPS Y7, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DI
	ADDQ    $32, R8
	ADDQ    $32, R9
	SUBQ    $8, CX
	JNZ     adam8
	VZEROUPPER
	RET

// func sumRows64Asm(dst, m *float32, rows, stride int)
TEXT ·sumRows64Asm(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ m+8(FP), SI
	MOVQ rows+16(FP), CX
	MOVQ stride+24(FP), DX
	SHLQ $2, DX
	VMOVUPS (DI), Y0
	VMOVUPS 32(DI), Y1
	VMOVUPS 64(DI), Y2
	VMOVUPS 96(DI), Y3
	VMOVUPS 128(DI), Y4
	VMOVUPS 160(DI), Y5
	VMOVUPS 192(DI), Y6
	VMOVUPS 224(DI), Y7

s64:
	VADDPS (SI), Y0, Y0
	VADDPS 32(SI), Y1, Y1
	VADDPS 64(SI), Y2, Y2
	VADDPS 96(SI), Y3, Y3
	VADDPS 128(SI), Y4, Y4
	VADDPS 160(SI), Y5, Y5
	VADDPS 192(SI), Y6, Y6
	VADDPS 224(SI), Y7, Y7
	ADDQ   DX, SI
	DECQ   CX
	JNZ    s64
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, 64(DI)
	VMOVUPS Y3, 96(DI)
	VMOVUPS Y4, 128(DI)
	VMOVUPS Y5, 160(DI)
	VMOVUPS Y6, 192(DI)
	VMOVUPS Y7, 224(DI)
	VZEROUPPER
	RET

// func sumRows8Asm(dst, m *float32, rows, stride int)
TEXT ·sumRows8Asm(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ m+8(FP), SI
	MOVQ rows+16(FP), CX
	MOVQ stride+24(FP), DX
	SHLQ $2, DX
	VMOVUPS (DI), Y0

s8:
	VADDPS (SI), Y0, Y0
	ADDQ   DX, SI
	DECQ   CX
	JNZ    s8
	VMOVUPS Y0, (DI)
	VZEROUPPER
	RET

// func adamRowsAsm(store *float32, stride int, rows *int32, n int, grad *float32, d int, c *adamConsts, l2 int)
// The loop of adamAsm on 128-bit registers (and on single floats for the
// last d mod 4), row by row: row r's weights start at store + r·stride
// floats, its moments d and 2d floats later. With l2 ≠ 0 each gradient
// float is first replaced, in grad too, by g + c.l2·w (a VMULPS and a
// VADDPS, as the Go loop rounds them), w the row's weight before the
// update.
TEXT ·adamRowsAsm(SB), NOSPLIT, $0-64
	MOVQ store+0(FP), DI
	MOVQ stride+8(FP), R10
	SHLQ $2, R10
	MOVQ rows+16(FP), SI
	MOVQ n+24(FP), CX
	MOVQ grad+32(FP), DX
	MOVQ d+40(FP), BX
	SHLQ $2, BX
	MOVQ c+48(FP), AX
	MOVQ l2+56(FP), R13
	VBROADCASTSS 0(AX), X8   // b1
	VBROADCASTSS 4(AX), X9   // c1
	VBROADCASTSS 8(AX), X10  // b2
	VBROADCASTSS 12(AX), X11 // c2
	VBROADCASTSS 16(AX), X12 // eps
	VBROADCASTSS 20(AX), X13 // step
	VBROADCASTSS 24(AX), X14 // vScale
	VBROADCASTSS 28(AX), X15 // l2

arow:
	MOVLQSX (SI), R12
	IMULQ   R10, R12
	ADDQ    DI, R12           // weights
	LEAQ    (R12)(BX*1), R8   // first moments
	LEAQ    (R8)(BX*1), R9    // second moments
	MOVQ    BX, R11
	ANDQ    $-16, R11         // bytes in whole groups of 4
	JZ      ascalar

achunk:
	VMOVUPS (DX), X0
	VMOVUPS (R12), X7
	TESTQ   R13, R13
	JZ      aupdate
	VMULPS  X7, X15, X5
	VADDPS  X5, X0, X0        // g + l2·w
	VMOVUPS X0, (DX)

aupdate:
	VMULPS  (R8), X8, X1
	VMULPS  X0, X9, X2
	VADDPS  X2, X1, X1
	VMULPS  (R9), X10, X3
	VMULPS  X0, X11, X4
	VMULPS  X0, X4, X4
	VADDPS  X4, X3, X3
	VMOVUPS X1, (R8)
	VMOVUPS X3, (R9)
	VSQRTPS X3, X5
	VMULPS  X14, X5, X5
	VADDPS  X12, X5, X5
	VMULPS  X1, X13, X6
	VDIVPS  X5, X6, X6
	VSUBPS  X6, X7, X7
	VMOVUPS X7, (R12)
	ADDQ    $16, DX
	ADDQ    $16, R8
	ADDQ    $16, R9
	ADDQ    $16, R12
	SUBQ    $16, R11
	JNZ     achunk

ascalar:
	MOVQ    BX, R11
	ANDQ    $15, R11          // bytes of the last d mod 4 floats
	JZ      anext

aone:
	VMOVSS  (DX), X0
	VMOVSS  (R12), X7
	TESTQ   R13, R13
	JZ      aoneupdate
	VMULSS  X7, X15, X5
	VADDSS  X5, X0, X0
	VMOVSS  X0, (DX)

aoneupdate:
	VMULSS  (R8), X8, X1
	VMULSS  X0, X9, X2
	VADDSS  X2, X1, X1
	VMULSS  (R9), X10, X3
	VMULSS  X0, X11, X4
	VMULSS  X0, X4, X4
	VADDSS  X4, X3, X3
	VMOVSS  X1, (R8)
	VMOVSS  X3, (R9)
	VSQRTSS X3, X3, X5
	VMULSS  X14, X5, X5
	VADDSS  X12, X5, X5
	VMULSS  X1, X13, X6
	VDIVSS  X5, X6, X6
	VSUBSS  X6, X7, X7
	VMOVSS  X7, (R12)
	ADDQ    $4, DX
	ADDQ    $4, R8
	ADDQ    $4, R9
	ADDQ    $4, R12
	SUBQ    $4, R11
	JNZ     aone

anext:
	ADDQ    $4, SI
	DECQ    CX
	JNZ     arow
	RET

// func prefetchRowsAsm(store *float32, stride int, rows *int32, n int)
// PREFETCHT0 store + rows[i]·stride floats, for i < n (n > 0).
TEXT ·prefetchRowsAsm(SB), NOSPLIT, $0-32
	MOVQ store+0(FP), DI
	MOVQ stride+8(FP), R10
	SHLQ $2, R10
	MOVQ rows+16(FP), SI
	MOVQ n+24(FP), CX

prow:
	MOVLQSX    (SI), AX
	IMULQ      R10, AX
	PREFETCHT0 (DI)(AX*1)
	ADDQ       $4, SI
	DECQ       CX
	JNZ        prow
	RET

// func prefetchKeysAsm(store *float32, stride int, keys *uint64, n int, off int)
// PREFETCHT0 store + (off + keys[i]>>32)·stride floats, for i < n (n > 0).
TEXT ·prefetchKeysAsm(SB), NOSPLIT, $0-40
	MOVQ store+0(FP), DI
	MOVQ stride+8(FP), R10
	SHLQ $2, R10
	MOVQ keys+16(FP), SI
	MOVQ n+24(FP), CX
	MOVQ off+32(FP), DX

pkey:
	MOVQ       (SI), AX
	SHRQ       $32, AX
	ADDQ       DX, AX
	IMULQ      R10, AX
	PREFETCHT0 (DI)(AX*1)
	ADDQ       $8, SI
	DECQ       CX
	JNZ        pkey
	RET

// func addAsm(dst, src *float32, n int)
TEXT ·addAsm(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	CMPQ CX, $32
	JLT  add8

add32:
	VMOVUPS (DI), Y0
	VMOVUPS 32(DI), Y1
	VMOVUPS 64(DI), Y2
	VMOVUPS 96(DI), Y3
	VADDPS  (SI), Y0, Y0
	VADDPS  32(SI), Y1, Y1
	VADDPS  64(SI), Y2, Y2
	VADDPS  96(SI), Y3, Y3
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, 64(DI)
	VMOVUPS Y3, 96(DI)
	ADDQ    $128, SI
	ADDQ    $128, DI
	SUBQ    $32, CX
	CMPQ    CX, $32
	JGE     add32

add8:
	TESTQ   CX, CX
	JZ      adddone
	VMOVUPS (DI), Y0
	VADDPS  (SI), Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DI
	SUBQ    $8, CX
	JMP     add8

adddone:
	VZEROUPPER
	RET

DATA iota8<>+0(SB)/4, $0
DATA iota8<>+4(SB)/4, $1
DATA iota8<>+8(SB)/4, $2
DATA iota8<>+12(SB)/4, $3
DATA iota8<>+16(SB)/4, $4
DATA iota8<>+20(SB)/4, $5
DATA iota8<>+24(SB)/4, $6
DATA iota8<>+28(SB)/4, $7
GLOBL iota8<>(SB), RODATA|NOPTR, $32

// func maxPoolRowAsm(y *float32, arg *int32, top, bottom *float32, ow, c, base, wc int)
// Per 8 channels: best and its index start at the top-left input; each
// of top-right, bottom-left, bottom-right replaces them where it is
// greater (VCMPPS predicate GT_OQ, false on NaN, as Go's >).
TEXT ·maxPoolRowAsm(SB), NOSPLIT, $0-64
	MOVQ y+0(FP), DI
	MOVQ arg+8(FP), SI
	MOVQ top+16(FP), R8
	MOVQ bottom+24(FP), R9
	MOVQ ow+32(FP), DX
	MOVQ c+40(FP), R10
	MOVQ base+48(FP), AX
	MOVQ wc+56(FP), BX
	VMOVQ        R10, X14
	VPBROADCASTD X14, Y14 // c
	VMOVQ        BX, X13
	VPBROADCASTD X13, Y13 // wc
	VPADDD       Y14, Y13, Y12 // wc + c
	MOVL         $8, CX
	VMOVD        CX, X11
	VPBROADCASTD X11, Y11 // 8
	VMOVQ        AX, X1
	VPBROADCASTD X1, Y1
	VPADDD       iota8<>(SB), Y1, Y1 // indices of the first window's top-left inputs
	MOVQ         R10, R11
	SHLQ         $2, R11 // c in bytes

mpcol:
	MOVQ R10, CX

mpch:
	VMOVUPS      (R8), Y2    // best
	VMOVDQU      Y1, Y3      // its index
	VMOVUPS      (R8)(R11*1), Y4
	VCMPPS       $0x1e, Y2, Y4, Y5
	VBLENDVPS    Y5, Y4, Y2, Y2
	VPADDD       Y14, Y1, Y6
	VBLENDVPS    Y5, Y6, Y3, Y3
	VMOVUPS      (R9), Y4
	VCMPPS       $0x1e, Y2, Y4, Y5
	VBLENDVPS    Y5, Y4, Y2, Y2
	VPADDD       Y13, Y1, Y6
	VBLENDVPS    Y5, Y6, Y3, Y3
	VMOVUPS      (R9)(R11*1), Y4
	VCMPPS       $0x1e, Y2, Y4, Y5
	VBLENDVPS    Y5, Y4, Y2, Y2
	VPADDD       Y12, Y1, Y6
	VBLENDVPS    Y5, Y6, Y3, Y3
	VMOVUPS      Y2, (DI)
	VMOVDQU      Y3, (SI)
	ADDQ         $32, R8
	ADDQ         $32, R9
	ADDQ         $32, DI
	ADDQ         $32, SI
	VPADDD       Y11, Y1, Y1
	SUBQ         $8, CX
	JNZ          mpch
	ADDQ         R11, R8 // skip the right-hand inputs to the next pair of columns
	ADDQ         R11, R9
	VPADDD       Y14, Y1, Y1
	DECQ         DX
	JNZ          mpcol
	VZEROUPPER
	RET

// SQUARES4 adds the squares of four columns of four rows into acc, column
// by column: the rows start at base, base+DX, base+2·DX and base+BX (DX
// the row stride in bytes, BX three strides); X0–X7 are scratch. The
// four loads are transposed so that each register holds one column of
// the four rows, then widened to float64, squared and added in column
// order.
#define SQUARES4(base, acc) \
	VMOVUPS   (base), X0; \
	VMOVUPS   (base)(DX*1), X1; \
	VMOVUPS   (base)(DX*2), X2; \
	VMOVUPS   (base)(BX*1), X3; \
	VUNPCKLPS X1, X0, X4; \
	VUNPCKHPS X1, X0, X5; \
	VUNPCKLPS X3, X2, X6; \
	VUNPCKHPS X3, X2, X7; \
	VMOVLHPS  X6, X4, X0; \
	VMOVHLPS  X4, X6, X1; \
	VMOVLHPS  X7, X5, X2; \
	VMOVHLPS  X5, X7, X3; \
	VCVTPS2PD X0, Y0; \
	VCVTPS2PD X1, Y1; \
	VCVTPS2PD X2, Y2; \
	VCVTPS2PD X3, Y3; \
	VMULPD    Y0, Y0, Y0; \
	VMULPD    Y1, Y1, Y1; \
	VMULPD    Y2, Y2, Y2; \
	VMULPD    Y3, Y3, Y3; \
	VADDPD    Y0, acc, acc; \
	VADDPD    Y1, acc, acc; \
	VADDPD    Y2, acc, acc; \
	VADDPD    Y3, acc, acc

// func sumSquares8Asm(dst *float64, m *float32, stride, n int)
// Eight rows, stride floats apart from m, n columns (a positive multiple
// of 4): dst[r] = Σ_k float64(row r's k-th float)², each row's terms
// added one by one in column order. Rows 0–3 and 4–7 are two groups of
// four lanes, each summed by SQUARES4 into its own accumulator.
TEXT ·sumSquares8Asm(SB), NOSPLIT, $0-32
	MOVQ   dst+0(FP), R8
	MOVQ   m+8(FP), SI
	MOVQ   stride+16(FP), DX
	MOVQ   n+24(FP), CX
	SHLQ   $2, DX
	LEAQ   (DX)(DX*2), BX         // 3 rows
	LEAQ   (SI)(DX*4), DI         // row 4
	VXORPD Y8, Y8, Y8
	VXORPD Y9, Y9, Y9

sq4:
	SQUARES4(SI, Y8)
	SQUARES4(DI, Y9)
	ADDQ $16, SI
	ADDQ $16, DI
	SUBQ $4, CX
	JNZ  sq4
	VMOVUPD Y8, (R8)
	VMOVUPD Y9, 32(R8)
	VZEROUPPER
	RET
