// The exp of attn-cpu-approximate-math, run: ordinary values to 6 digits,
// exp(-inf) = 0, exp(+inf) = inf, exp(NaN) = NaN, e^88.5 finite; below
// about 2^-125 the exponent-field path flushes to 0 and vscalefps keeps
// the denormals. (A scalar exp stays libm's.)
// RUN: attn-opt %s --attn-cpu-approximate-math | mlir-opt --convert-vector-to-scf --convert-scf-to-cf --convert-math-to-llvm --convert-vector-to-llvm --convert-to-llvm --reconcile-unrealized-casts | mlir-runner -e main -entry-point-result=void -shared-libs=%runner_libs | FileCheck %s
// RUN: %if avx512f %{ attn-opt %s --attn-cpu-approximate-math=avx512 | mlir-opt --convert-vector-to-scf --convert-scf-to-cf --convert-math-to-llvm --convert-vector-to-llvm=enable-x86vector --convert-to-llvm --reconcile-unrealized-casts | mlir-runner -e main -entry-point-result=void -shared-libs=%runner_libs | FileCheck %s --check-prefix=AVX512 %}
// CHECK: ( 1, 0.367879, 0.606531, 2.71828, 4.53999e-05, 0, 0, 0, 7.38906, 0.0368832, 2.06115e-09, 1.28403, 0.496585, 2.72309e+38, inf, nan )
// CHECK-NEXT: 4.53999e-05
// AVX512: ( 1, 0.367879, 0.606531, 2.71828, 4.53999e-05, 9.98235e-39, 3.78351e-44, 0, 7.38906, 0.0368832, 2.06115e-09, 1.28403, 0.496585, 2.72309e+38, inf, nan )
func.func @f(%x: vector<16xf32>) -> vector<16xf32> {
  %e = math.exp %x : vector<16xf32>
  return %e : vector<16xf32>
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
  return
}
