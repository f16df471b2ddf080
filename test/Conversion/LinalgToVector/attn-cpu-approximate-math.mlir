// attn-cpu-approximate-math: exp of f32 vectors as 2^(x · log2 e), exp2
// as 2^y: a degree-5 polynomial of y's fraction (4 for bf16 weights) times 2^n (vscalefps on
// 16-lane vectors with avx512, else the exponent field of 2^(n-1) times
// 2·2^f);
// tanh of vectors as MLIR's approximation; scalars and other ops untouched.
// RUN: attn-opt %s --attn-cpu-approximate-math | FileCheck %s
// RUN: attn-opt %s --attn-cpu-approximate-math=avx512 | FileCheck %s --check-prefix=AVX512

// A vector<8xf32>: y = x · log2 e, the clamp to [-126, 128] keeps NaN
// (select of an ordered compare), s = y + 1.5·2^23 + 126 rounds y to
// n = s - (1.5·2^23 + 126), f = y - n exactly, 5 FMAs of the polynomial
// of 2^f, the exponent field of 2^(n-1): s's bits shifted left by 23.
// CHECK-LABEL: func.func @exp_vector8
// CHECK: %[[Y:.*]] = arith.mulf %{{.*}}, %{{.*}} : vector<8xf32>
// CHECK: %[[LT:.*]] = arith.cmpf olt, %[[Y]], %[[LO:.*]] : vector<8xf32>
// CHECK: %[[X1:.*]] = arith.select %[[LT]], %[[LO]], %[[Y]] : vector<8xi1>, vector<8xf32>
// CHECK: %[[GT:.*]] = arith.cmpf ogt, %[[X1]], %{{.*}} : vector<8xf32>
// CHECK: %[[X:.*]] = arith.select %[[GT]]
// CHECK-NOT: math.roundeven
// CHECK: %[[SHIFT:.*]] = arith.constant dense<0x4B40007E> : vector<8xf32>
// CHECK: %[[S:.*]] = arith.addf %[[X]], %[[SHIFT]] : vector<8xf32>
// CHECK: %[[SHIFT2:.*]] = arith.constant dense<0x4B40007E> : vector<8xf32>
// CHECK: %[[N:.*]] = arith.subf %[[S]], %[[SHIFT2]] : vector<8xf32>
// CHECK: %[[F:.*]] = arith.subf %[[X]], %[[N]] : vector<8xf32>
// CHECK-COUNT-5: math.fma %{{.*}}, %[[F]], %{{.*}} : vector<8xf32>
// CHECK-NOT: math.fma
// CHECK: %[[SI:.*]] = arith.bitcast %[[S]] : vector<8xf32> to vector<8xi32>
// CHECK: %[[BITS:.*]] = arith.shli %[[SI]], %{{.*}} : vector<8xi32>
// CHECK: %[[SCALE:.*]] = arith.bitcast %[[BITS]] : vector<8xi32> to vector<8xf32>
// CHECK: arith.mulf %{{.*}}, %[[SCALE]] : vector<8xf32>
// CHECK-NOT: math.exp
// 8 lanes never take vscalefps (a 512-bit instruction here).
// AVX512-LABEL: func.func @exp_vector8
// AVX512-NOT: x86vector
// AVX512: arith.bitcast %{{.*}} : vector<8xi32> to vector<8xf32>
func.func @exp_vector8(%x: vector<8xf32>) -> vector<8xf32> {
  %e = math.exp %x : vector<8xf32>
  return %e : vector<8xf32>
}

// The online softmax's exp, marked attn.nonpositive_arg (its argument is
// at most 0 or NaN): clamped from below only; the mark goes, from the
// scalar exp the pass leaves too.
// CHECK-LABEL: func.func @exp_nonpositive
// CHECK: arith.cmpf olt
// CHECK-NOT: arith.cmpf ogt
// CHECK: arith.addf
// CHECK: math.exp %arg1 : f32
// CHECK-NOT: attn.nonpositive_arg
// CHECK: return
func.func @exp_nonpositive(%x: vector<8xf32>, %s: f32) -> (vector<8xf32>, f32) {
  %e = math.exp %x {attn.nonpositive_arg} : vector<8xf32>
  %f = math.exp %s {attn.nonpositive_arg} : f32
  return %e, %f : vector<8xf32>, f32
}

// The exp of softmax weights that P·V takes rounded to bf16, marked
// attn.bf16_weight: the degree-4 polynomial (4 FMAs, 2.9e-6 relative), on
// both ways to 2^n; the mark goes, from the scalar exp the pass leaves too.
// CHECK-LABEL: func.func @exp_bf16_weight
// CHECK: arith.subf
// CHECK-COUNT-4: math.fma
// CHECK-NOT: math.fma
// CHECK: arith.bitcast %{{.*}} : vector<16xi32> to vector<16xf32>
// CHECK: math.exp %arg1 : f32
// CHECK-NOT: attn.bf16_weight
// CHECK: return
// AVX512-LABEL: func.func @exp_bf16_weight
// AVX512: math.roundeven
// AVX512-COUNT-4: math.fma
// AVX512-NOT: math.fma
// AVX512: x86vector.avx512.mask.scalef
// AVX512-NOT: attn.bf16_weight
// AVX512: return
func.func @exp_bf16_weight(%x: vector<16xf32>, %s: f32) -> (vector<16xf32>, f32) {
  %e = math.exp %x {attn.bf16_weight, attn.nonpositive_arg} : vector<16xf32>
  %f = math.exp %s {attn.bf16_weight} : f32
  return %e, %f : vector<16xf32>, f32
}

// Without avx512 a 16-lane vector takes the exponent field too; with it,
// vscalefps.
// CHECK-LABEL: func.func @exp_vector
// CHECK: arith.bitcast %{{.*}} : vector<16xi32> to vector<16xf32>
// CHECK-NOT: x86vector
// AVX512-LABEL: func.func @exp_vector
// AVX512: %[[N:.*]] = math.roundeven %{{.*}} : vector<16xf32>
// AVX512: x86vector.avx512.mask.scalef %[[P:.*]], %[[N]], %[[P]], %{{.*}}, %{{.*}} : vector<16xf32>
// AVX512-NOT: arith.bitcast
func.func @exp_vector(%x: vector<16xf32>) -> vector<16xf32> {
  %e = math.exp %x : vector<16xf32>
  return %e : vector<16xf32>
}

// exp2 takes the same path without the multiply by log2 e; with avx512 a
// 16-lane one takes vscalefps.
// CHECK-LABEL: func.func @exp2_vector
// CHECK-NOT: arith.mulf %{{.*}}, %cst
// CHECK: %[[S2:.*]] = arith.addf %{{.*}}, %{{.*}} : vector<16xf32>
// CHECK: %[[N2:.*]] = arith.subf %[[S2]], %{{.*}} : vector<16xf32>
// CHECK: arith.subf %{{.*}}, %[[N2]] : vector<16xf32>
// CHECK-COUNT-5: math.fma
// CHECK: arith.bitcast %{{.*}} : vector<16xi32> to vector<16xf32>
// CHECK-NOT: math.exp2
// AVX512-LABEL: func.func @exp2_vector
// AVX512: %[[N2:.*]] = math.roundeven %{{.*}} : vector<16xf32>
// AVX512: x86vector.avx512.mask.scalef %[[P2:.*]], %[[N2]], %[[P2]], %{{.*}}, %{{.*}} : vector<16xf32>
// AVX512-NOT: math.exp2
func.func @exp2_vector(%x: vector<16xf32>) -> vector<16xf32> {
  %e = math.exp2 %x : vector<16xf32>
  return %e : vector<16xf32>
}

// Scalars stay math ops (LLVM vectorizes their loops with libmvec); a
// vector tanh (softcap) is approximated, f16 through f32; f64 is left.
// CHECK-LABEL: func.func @others
// CHECK: math.exp %{{.*}} : f32
// CHECK: math.tanh %{{.*}} : f32
// CHECK-NOT: math.tanh
// CHECK: math.exp %{{.*}} : vector<4xf64>
func.func @others(%x: f32, %y: vector<16xf16>, %z: vector<4xf64>) -> (f32, f32, vector<16xf16>, vector<4xf64>) {
  %e = math.exp %x : f32
  %t = math.tanh %x : f32
  %tv = math.tanh %y : vector<16xf16>
  %ed = math.exp %z : vector<4xf64>
  return %e, %t, %tv, %ed : f32, f32, vector<16xf16>, vector<4xf64>
}
