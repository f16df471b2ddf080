// attn-decompose-online: a sink σ joins the denominator of
// attn.online_finish: O = acc / (l + e^(σ - c·m)) (nothing added where σ
// is -inf), LSE = M + log(l·e^(c·m - M) + e^(σ - M)) with M = max(c·m, σ),
// -inf where M is.
// RUN: attn-opt %s --attn-decompose-online | FileCheck %s

// CHECK-LABEL: func.func @finish_sinks
// CHECK: linalg.generic
// CHECK: ^bb0(%[[M:.*]]: f32, %[[L:.*]]: f32, %[[S:.*]]: f32, %{{.*}}: f32):
// CHECK: %[[MN:.*]] = arith.mulf %[[M]], %{{.*}} : f32
// CHECK: %[[NONE:.*]] = arith.cmpf oeq, %[[S]], %{{.*}} : f32
// CHECK: %[[D:.*]] = arith.subf %[[S]], %[[MN]] : f32
// CHECK: %[[E:.*]] = math.exp %[[D]] : f32
// CHECK: %[[E0:.*]] = arith.select %[[NONE]], %{{.*}}, %[[E]] : f32
// CHECK: arith.addf %[[L]], %[[E0]] : f32
// The LSE.
// CHECK: linalg.generic
// CHECK: ^bb0(%[[LM:.*]]: f32, %[[LL:.*]]: f32, %[[LS:.*]]: f32, %{{.*}}: f32):
// CHECK: %[[LMN:.*]] = arith.mulf %[[LM]], %{{.*}} : f32
// CHECK: %[[TOP:.*]] = arith.maximumf %[[LMN]], %[[LS]] : f32
// CHECK: math.log
// CHECK: arith.cmpf oeq, %[[TOP]]
func.func @finish_sinks(%m: tensor<32xf32>, %l: tensor<32xf32>, %acc: tensor<32x64xf32>,
                        %s: tensor<32xf32>) -> (tensor<32x64xf32>, tensor<32xf32>) {
  %o, %lse = attn.online_finish state(%m, %l, %acc) sinks(%s : tensor<32xf32>)
      {exponent_scale = 0.125 : f64}
      : tensor<32xf32>, tensor<32x64xf32> -> tensor<32x64xf32>, tensor<32xf32>
  return %o, %lse : tensor<32x64xf32>, tensor<32xf32>
}
