"""Prints a function of N chained elementwise linalg ops (N kernels on the
CUDA target). Usage: gen-chain.py N"""
import sys

n = int(sys.argv[1])
t = "tensor<8xf32>"
m = "affine_map<(i) -> (i)>"
print(f"func.func @chain(%x0: {t}) -> {t} {{")
for i in range(n):
    print(f"  %x{i + 1} = linalg.generic {{indexing_maps = [{m}, {m}], "
          f"iterator_types = [\"parallel\"]}} ins(%x{i} : {t}) "
          f"outs(%x{i} : {t}) {{\n"
          f"  ^bb0(%a: f32, %o: f32):\n"
          f"    %s = arith.addf %a, %a : f32\n"
          f"    linalg.yield %s : f32\n"
          f"  }} -> {t}")
print(f"  return %x{n} : {t}\n}}")
