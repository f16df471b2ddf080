#!/usr/bin/env python3
"""Writes the seed corpus of attn-fuzz-runtime (see attn-fuzz-runtime.cpp for
the first byte, which selects the reader).

  usage: make-runtime-seeds.py OUT_DIR ATTN_COMPILE CLANG

- .npy files written by numpy: every dtype the runtime reads (bfloat16 as
  '<V2'), shapes of rank 0 to 4 and with zero-sized dimensions, .npy format
  versions 1 to 3, the dtypes and orders it refuses, and truncated files;
- the metadata of real artifacts (attn-compile on small graphs and the
  examples), raw and to be resealed;
- small real artifacts, and tiny hand-made ones (C, sealed here, linked
  without libc) for the CPU and the CUDA target, for the ELF checker and the
  C API.
"""
import hashlib
import io
import os
import subprocess
import sys
import tempfile

import numpy as np

OUT, ATTN_COMPILE, CLANG = sys.argv[1:4]
SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
HEADER = "attn-mlir-artifact 6"
count = {"npy": 0, "metadata": 0, "elf": 0}


def put(kind, mode, data):
    data = bytes([mode]) + data
    name = hashlib.sha1(data).hexdigest()
    with open(os.path.join(OUT, name), "wb") as f:
        f.write(data)
    count[kind] += 1


def npy_bytes(array, version=None):
    buf = io.BytesIO()
    np.lib.format.write_array(buf, array, version=version, allow_pickle=False)
    return buf.getvalue()


def npy_seeds():
    rng = np.random.default_rng(0)
    shapes = [(), (0,), (1,), (5,), (2, 3), (1, 2, 3, 4), (2, 0, 3),
              (3, 1, 1, 2)]
    dtypes = [np.float32, np.float16, np.bool_, np.dtype("V2")]
    for shape in shapes:
        for dt in dtypes:
            if dt == np.bool_:
                a = rng.random(shape) < 0.5
            elif isinstance(dt, np.dtype):  # bfloat16 as raw 2 bytes
                a = rng.integers(0, 1 << 16, shape, dtype=np.uint16).view(dt)
            else:
                a = rng.standard_normal(shape).astype(dt)
            put("npy", 0, npy_bytes(a))
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 6e-8, 65504,
                        1e-45, 3.4e38], dtype=np.float32)
    put("npy", 0, npy_bytes(special))
    put("npy", 0, npy_bytes(special.astype(np.float16)))
    for version in [(1, 0), (2, 0), (3, 0)]:
        put("npy", 0, npy_bytes(np.ones((2, 2), np.float32), version))
    # Refused: other dtypes, big-endian, Fortran order.
    for a in [np.ones((2, 2)), np.ones(3, np.int32),
              np.ones(3, np.dtype(">f4")),
              np.asfortranarray(np.ones((2, 3), np.float32))]:
        put("npy", 0, npy_bytes(a))
    full = npy_bytes(np.arange(24, dtype=np.float32).reshape(2, 3, 4))
    for cut in [4, 9, 30, 127, len(full) - 1]:
        put("npy", 0, full[:cut])


def metadata_of(so_bytes):
    start = so_bytes.find(HEADER.encode())
    if start < 0:
        return None
    return so_bytes[start:so_bytes.index(b"\0", start)]


GRAPHS = {
    "sdpa_mask_lse": """
func.func @sdpa(%q: tensor<1x2x8x16xf32>, %k: tensor<1x1x12x16xf32>,
    %v: tensor<1x1x12x8xf32>, %m: tensor<8x12xi1>)
    -> (tensor<1x2x8x8xf32>, tensor<1x2x8xf32>) {
  %o, %l = attn.sdpa %q, %k, %v mask(%m : tensor<8x12xi1>)
      {causal = #attn.causal<bottom_right>, window = array<i64: 4, 0>,
       softcap = 30.0 : f32}
      : tensor<1x2x8x16xf32>, tensor<1x1x12x16xf32>, tensor<1x1x12x8xf32>
      -> tensor<1x2x8x8xf32>, tensor<1x2x8xf32>
  return %o, %l : tensor<1x2x8x8xf32>, tensor<1x2x8xf32>
}""",
    "mha_biases": """
func.func @layer(%x: tensor<2x4x16xf16>, %wq: tensor<16x16xf16>,
    %wk: tensor<16x8xf16>, %wv: tensor<16x8xf16>, %wo: tensor<16x16xf16>,
    %bq: tensor<16xf16>, %bo: tensor<16xf16>, %m: tensor<4x4xf16>)
    -> tensor<2x4x16xf16> {
  %y = attn.mha %x : tensor<2x4x16xf16>
      weights(%wq, %wk, %wv, %wo) : tensor<16x16xf16>, tensor<16x8xf16>,
        tensor<16x8xf16>, tensor<16x16xf16>
      bias_q(%bq : tensor<16xf16>) bias_o(%bo : tensor<16xf16>)
      mask(%m : tensor<4x4xf16>)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64} -> tensor<2x4x16xf16>
  return %y : tensor<2x4x16xf16>
}""",
    "softmax": """
func.func @softmax(%x: tensor<3x8xbf16>) -> tensor<3x8xbf16> {
  %y = attn.softmax %x {temperature = 2.0 : f32} : tensor<3x8xbf16>
  return %y : tensor<3x8xbf16>
}""",
}


def compiled_seeds(tmp):
    sources = []
    for name, text in GRAPHS.items():
        path = os.path.join(tmp, name + ".mlir")
        with open(path, "w") as f:
            f.write(text)
        sources.append((path, True))
    for rel in ["test/Tools/Inputs/sdpa-small.mlir",
                "test/Tools/Inputs/sdpa-f16.mlir"]:
        sources.append((os.path.join(SRC, rel), True))
    for name in sorted(os.listdir(os.path.join(SRC, "test/Examples"))):
        sources.append((os.path.join(SRC, "test/Examples", name), False))
    for path, keep_elf in sources:
        so = os.path.join(tmp, os.path.basename(path) + ".so")
        if subprocess.run([ATTN_COMPILE, path, "-o", so],
                          capture_output=True).returncode != 0:
            print(f"  (attn-compile failed on {path})")
            continue
        data = open(so, "rb").read()
        meta = metadata_of(data)
        if meta:
            put("metadata", 1, meta)
            put("metadata", 5, meta)
        if keep_elf:
            elf_seeds(data)


def seal(records):
    return records + "end checksum=%016x\n" % fnv1a64(records.encode())


def fnv1a64(data):
    h = 14695981039346656037
    for b in data:
        h = ((h ^ b) * 1099511628211) % (1 << 64)
    return h


def file_seal(data):
    """The seal attn-compile appends to an artifact (Format.h)."""
    return b"\nattn-mlir-seal fnv1a64=%016x\n" % fnv1a64(data)


def c_string(s):
    return '"' + s.encode("unicode_escape").decode().replace('"', '\\"') + '"'


FAKES = {
    "cpu_sdpa": (HEADER + "\ntarget cpu\nentry sdpa\n"
                 "in q f32 1,2,4,8\nin k f32 1,1,4,8\nin v f32 1,1,4,8\n"
                 "in mask bool 1,1,4,4\nout output f32 1,2,4,8\n"
                 "out lse f32 1,2,4\n"
                 "op sdpa scale=0.353553391 causal=top_left window=2,0 "
                 "softcap=0\n", ["sdpa"], {}),
    "cpu_two_entries": (HEADER + "\ntarget cpu\nentry softmax\n"
                        "in x f16 2,3\nout output f16 2,3\n"
                        "op softmax temperature=1\nentry plain\n"
                        "in arg0 bf16 4\nout out0 bf16 4\n",
                        ["softmax", "plain"], {}),
    "cpu_mha": (HEADER + "\ntarget cpu\nentry layer\n"
                "in x f32 1,3,8\nin kv f32 1,5,4\nin wq f32 8,8\n"
                "in wk f32 4,4\nin wv f32 4,4\nin wo f32 8,6\n"
                "in bk f32 4\nin mask f32 3,5\nout output f32 1,3,6\n"
                "op mha heads=2 kv_heads=1 scale=0.5 causal=none "
                "window=-1,-1 softcap=0\n", ["layer"], {}),
    "cuda_sdpa": (HEADER + "\ntarget cuda\nentry sdpa\n"
                  "in q f16 1,1,16,16\nin k f16 1,1,16,16\n"
                  "in v f16 1,1,16,16\nout output f16 1,1,16,16\n"
                  "op sdpa scale=0.25 causal=none window=-1,-1 softcap=0\n"
                  "kernel sdpa_kernel grid=1,1,1 block=128,1,1 smem=4096 "
                  "args=0,1,2,3 image=attn_mlir_image_0 format=ptx size=17\n",
                  [], {"attn_mlir_image_0": "// a ptx image 0"}),
    # Three kernels (two of one module) over two scratch buffers.
    "cuda_layer": (HEADER + "\ntarget cuda\nentry layer\n"
                   "in x f16 1,16,32\nin w f16 32,32\nout y f16 1,16,32\n"
                   "buffer bytes=1024\nbuffer bytes=4096\n"
                   "kernel proj grid=1,1,1 block=128,1,1 smem=0 "
                   "args=0,1,3 image=attn_mlir_image_0 format=ptx size=17\n"
                   "kernel attn grid=1,1,1 block=128,1,1 smem=4096 "
                   "args=3,4 image=attn_mlir_image_1 format=ptx size=17\n"
                   "kernel proj_out grid=1,1,1 block=128,1,1 smem=0 "
                   "args=4,1,2 image=attn_mlir_image_0 format=ptx size=17\n",
                   [], {"attn_mlir_image_0": "// a ptx image 0",
                        "attn_mlir_image_1": "// a ptx image 1"}),
}


def fake_seeds(tmp):
    sources = {}
    for name, (records, functions, images) in FAKES.items():
        text = "const char attn_mlir_metadata[] = %s;\n" % c_string(
            seal(records))
        for f in functions:
            text += "void %s(void *a, void *b) { *(char *)b = *(char *)a; }\n" % f
        for sym, value in images.items():
            text += "const char %s[] = %s;\n" % (sym, c_string(value))
        sources[name] = text
    inputs = os.path.join(SRC, "test/Tools/Inputs")
    for name in ["too-large.c", "cuda-target.c", "no-metadata.c",
                 "wrong-kernel.c"]:
        text = open(os.path.join(inputs, name)).read()
        if "attn_mlir_metadata" in text:
            text = subprocess.run(
                [sys.executable, os.path.join(inputs, "seal-metadata.py"),
                 os.path.join(inputs, name)],
                capture_output=True, text=True, check=True).stdout
        # Linked without libc: no headers, no calls (a loop for memset).
        text = text.replace("#include <string.h>", "").replace(
            "memset(out->aligned, 0, 4 * 8 * sizeof(float));",
            "for (int i = 0; i < 4 * 8; ++i) out->aligned[i] = 0;")
        assert "memset" not in text and "#include" not in text, name
        sources[name[:-2]] = text
    for name, text in sources.items():
        c = os.path.join(tmp, name + ".c")
        so = os.path.join(tmp, name + ".fake.so")
        with open(c, "w") as f:
            f.write(text)
        subprocess.run([CLANG, "-shared", "-fPIC", "-O1", "-nostdlib",
                        "-Wl,-z,noseparate-code", "-Wl,--build-id=none",
                        "-Wl,-z,norelro", "-Wl,--hash-style=gnu", "-o", so, c],
                       check=True)
        data = open(so, "rb").read()
        data += file_seal(data)
        elf_seeds(data)
        meta = metadata_of(data)
        if meta:
            put("metadata", 1, meta)
            put("metadata", 5, meta)


def elf_seeds(data):
    # The ELF checker, with and without the checksum patched; the C API with
    # a buffer of 0, 255 and 1 MiB bytes.
    for mode in [0x02, 0x06, 0x07, 0x77, 0xF7]:
        put("elf", mode, data)


def main():
    os.makedirs(OUT, exist_ok=True)
    npy_seeds()
    with tempfile.TemporaryDirectory() as tmp:
        compiled_seeds(tmp)
        fake_seeds(tmp)
    print("seeded %d .npy, %d metadata and %d artifact inputs" %
          (count["npy"], count["metadata"], count["elf"]))


main()
