// The exp of attn-cpu-approximate-math, run: ordinary values to 6 digits,
// exp(0) exactly 1, a relative error below 1.5e-6 against libm's expf
// over [-20, 0] in steps of 0.001 (9.8e-7 measured: the rounding of
// x · log2 e grows with |x|), the degree-4 exp2 of bf16 weights within
// 4e-6 of exp2f, exp(-inf) = 0, exp(+inf) = inf,
// exp(NaN) = NaN, e^88.5 finite; below about 2^-125 the exponent-field
// path flushes to 0 and vscalefps keeps the denormals (exp(-87.5) =
// 9.982351e-39 reads 9.98234e-39 on a Zen 4: at |x| = 87.5 that rounding
// is 1e-6 relative). (A scalar exp stays libm's.)
// RUN: attn-opt %s --attn-cpu-approximate-math | mlir-opt --convert-vector-to-scf --convert-scf-to-cf --convert-math-to-llvm --convert-vector-to-llvm --convert-to-llvm --reconcile-unrealized-casts | mlir-runner -e main -entry-point-result=void -shared-libs=%runner_libs | FileCheck %s
// RUN: %if avx512f %{ attn-opt %s --attn-cpu-approximate-math=avx512 | mlir-opt --convert-vector-to-scf --convert-scf-to-cf --convert-math-to-llvm --convert-vector-to-llvm=enable-x86vector --convert-to-llvm --reconcile-unrealized-casts | mlir-runner -e main -entry-point-result=void -shared-libs=%runner_libs | FileCheck %s --check-prefix=AVX512 %}
// CHECK: ( 1, 0.367879, 0.606531, 2.71828, 4.53999e-05, 0, 0, 0, 7.38906, 0.0368832, 2.06115e-09, 1.28403, 0.496585, 2.72309e+38, inf, nan )
// CHECK-NEXT: 4.53999e-05
// CHECK-NEXT: 1
// CHECK-NEXT: 1
// CHECK-NEXT: 1
// CHECK-NEXT: 1
// AVX512: ( 1, 0.367879, 0.606531, 2.71828, 4.53999e-05, {{9.9823[45]}}e-39, 3.78351e-44, 0, 7.38906, 0.0368832, 2.06115e-09, 1.28403, 0.496585, 2.72309e+38, inf, nan )
func.func @f(%x: vector<16xf32>) -> vector<16xf32> {
  %e = math.exp %x : vector<16xf32>
  return %e : vector<16xf32>
}
func.func @f8(%x: vector<8xf32>) -> vector<8xf32> {
  %e = math.exp %x : vector<8xf32>
  return %e : vector<8xf32>
}
// exp2 of bf16 softmax weights (attn.bf16_weight): the degree-4
// polynomial, within 4e-6 of libm's exp2f over [-20, 0] (2.9e-6 by its
// fit; above 1e-6, so not the degree-5 one).
func.func @w8(%x: vector<8xf32>) -> vector<8xf32> {
  %e = math.exp2 %x {attn.bf16_weight, attn.nonpositive_arg} : vector<8xf32>
  return %e : vector<8xf32>
}
func.func @g2(%x: f32) -> f32 {
  %e = math.exp2 %x : f32
  return %e : f32
}
// The largest relative error of %vf against the scalar %sf (libm's) at
// x = -0.001 i, i < 20000.
func.func @sweep(%vf: (vector<8xf32>) -> vector<8xf32>, %sf: (f32) -> f32) -> f32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %n = arith.constant 2500 : index
  %zero = arith.constant 0.0 : f32
  %eight = arith.constant 8.0 : f32
  %step = arith.constant dense<-0.001> : vector<8xf32>
  %lanes = arith.constant dense<[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]> : vector<8xf32>
  %worst = scf.for %i = %c0 to %n step %c1 iter_args(%m = %zero) -> f32 {
    %ii = arith.index_cast %i : index to i32
    %fi = arith.sitofp %ii : i32 to f32
    %first = arith.mulf %fi, %eight : f32
    %b = vector.broadcast %first : f32 to vector<8xf32>
    %k = arith.addf %b, %lanes : vector<8xf32>
    %x = arith.mulf %k, %step : vector<8xf32>
    %e = func.call_indirect %vf(%x) : (vector<8xf32>) -> vector<8xf32>
    %mm = scf.for %l = %c0 to %c8 step %c1 iter_args(%a = %m) -> f32 {
      %xl = vector.extract %x[%l] : f32 from vector<8xf32>
      %el = vector.extract %e[%l] : f32 from vector<8xf32>
      %rl = func.call_indirect %sf(%xl) : (f32) -> f32
      %d = arith.subf %el, %rl : f32
      %ad = math.absf %d : f32
      %rel = arith.divf %ad, %rl : f32
      %w = arith.maximumf %a, %rel : f32
      scf.yield %w : f32
    }
    scf.yield %mm : f32
  }
  return %worst : f32
}
func.func @g(%x: f32) -> f32 {
  %e = math.exp %x : f32
  return %e : f32
}
func.func @main() {
  %x = arith.constant dense<[0.0, -1.0, -0.5, 1.0, -10.0, -87.5, -100.0, 0xFF800000, 2.0, -3.3, -20.0, 0.25, -0.7, 88.5, 0x7F800000, 0x7FC00000]> : vector<16xf32>
  %e = func.call @f(%x) : (vector<16xf32>) -> vector<16xf32>
  vector.print %e : vector<16xf32>
  %s = arith.constant -10.0 : f32
  %es = func.call @g(%s) : (f32) -> f32
  vector.print %es : f32
  %zeros = arith.constant dense<0.0> : vector<8xf32>
  %ones = func.call @f8(%zeros) : (vector<8xf32>) -> vector<8xf32>
  %one = vector.extract %ones[0] : f32 from vector<8xf32>
  %c1f = arith.constant 1.0 : f32
  %exact = arith.cmpf oeq, %one, %c1f : f32
  vector.print %exact : i1
  %f8 = func.constant @f8 : (vector<8xf32>) -> vector<8xf32>
  %g = func.constant @g : (f32) -> f32
  %worst = func.call @sweep(%f8, %g) : ((vector<8xf32>) -> vector<8xf32>, (f32) -> f32) -> f32
  %bound = arith.constant 1.5e-6 : f32
  %ok = arith.cmpf olt, %worst, %bound : f32
  vector.print %ok : i1
  %w8 = func.constant @w8 : (vector<8xf32>) -> vector<8xf32>
  %g2 = func.constant @g2 : (f32) -> f32
  %worstw = func.call @sweep(%w8, %g2) : ((vector<8xf32>) -> vector<8xf32>, (f32) -> f32) -> f32
  %boundw = arith.constant 4.0e-6 : f32
  %okw = arith.cmpf olt, %worstw, %boundw : f32
  vector.print %okw : i1
  %floorw = arith.constant 1.0e-6 : f32
  %coarse = arith.cmpf ogt, %worstw, %floorw : f32
  vector.print %coarse : i1
  return
}
