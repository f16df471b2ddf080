# -*- Python -*-
# lit configuration of the attn-mlir regression suite.

import os
import shutil
import subprocess
import sys

import lit.formats
import lit.util
from lit.llvm import llvm_config
from lit.llvm.subst import ToolSubst

config.name = "ATTN"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.attn_obj_root, "test")
config.excludes = ["CMakeLists.txt", "README.md", "lit.cfg.py",
                   "lit.site.cfg.py", "Inputs"]

config.substitutions.append(("%PATH%", config.environment["PATH"]))
config.substitutions.append(("%attn_src_root", config.attn_src_root))
config.substitutions.append(("%attn_lib_dir", config.attn_lib_dir))
config.substitutions.append(("%attn_tools_dir", config.attn_tools_dir))
config.substitutions.append(("%clang", os.path.join(config.llvm_tools_dir, "clang")))
# mlir-runner's support libraries (print functions), for tests that run the
# output of one pass through upstream lowerings.
_llvm_lib = os.path.join(os.path.dirname(config.llvm_tools_dir), "lib")
config.substitutions.append(
    ("%runner_libs", ",".join(os.path.join(_llvm_lib, l) for l in
                              ("libmlir_runner_utils.so",
                               "libmlir_c_runner_utils.so"))))
config.substitutions.append(("%python", sys.executable))
# Seals a hand-made artifact as attn-compile seals its own (Format.h).
config.substitutions.append(
    ("%seal", sys.executable + " " +
     os.path.join(config.attn_src_root, "test", "Tools", "Inputs", "seal-file.py")))
# The C API library loads into a plain Python unless it was built with the
# sanitizers (their runtimes live in the executables).
if config.attn_sanitizers.upper() not in ("ON", "TRUE", "1", "YES"):
    config.available_features.add("capi")
else:
    config.available_features.add("sanitizers")
# The python3 on PATH, when it has numpy (make check installs it there; lit
# itself may run on another interpreter): independent fp64 checks in numpy.
_np_python = shutil.which("python3", path=config.environment["PATH"])
if _np_python and subprocess.run([_np_python, "-c", "import numpy"],
                                 capture_output=True).returncode == 0:
    config.available_features.add("numpy")
    if subprocess.run([_np_python, "-c", "import ml_dtypes"],
                      capture_output=True).returncode == 0:
        config.available_features.add("ml_dtypes")  # bf16 in numpy
    config.substitutions.append(("%numpy_python", _np_python))
# The host half of attn-gpu-pipeline after the kernel lowerings: One-Shot
# Bufferize with caller-allocated results and attn-gpu-host (as
# buildGpuKernelsPipeline runs them), so that a kernel reads %argN.
config.substitutions.append(
    ("%gpu-host",
     "--one-shot-bufferize='bufferize-function-boundaries "
     "function-boundary-type-conversion=identity-layout-map' "
     "--buffer-results-to-out-params='hoist-static-allocs "
     "modify-public-functions' --attn-gpu-host"))

# Captured FileCheck variables do not leak between CHECK-LABEL blocks.
config.environment["FILECHECK_OPTS"] = "-enable-var-scope"

llvm_config.with_system_environment(["HOME", "INCLUDE", "LIB", "TMP", "TEMP"])
llvm_config.use_default_substitutions()

tool_dirs = [config.attn_tools_dir, config.llvm_tools_dir]
tools = ["attn-opt", "attn-compile", "attn-run", "attn-gpu-emulate"]
llvm_config.add_tool_substitutions(
    [ToolSubst(t, unresolved="ignore") for t in tools], tool_dirs)
llvm_config.with_environment("PATH", config.attn_tools_dir, append_path=True)
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)

# `avx512f`, `avx512bf16`, `amx`: this machine's CPU features that decide
# the CPU kernels attn-compile chooses (tests that run bf16 dot-product
# kernels need avx512bf16, AMX tile kernels amx; tests of a machine
# without one UNSUPPORT it).
try:
    with open("/proc/cpuinfo") as _f:
        _flags = next((l.split(":", 1)[1].split() for l in _f
                       if l.startswith("flags")), [])
except OSError:
    _flags = []
if "avx512f" in _flags:
    config.available_features.add("avx512f")
    if "avx512_bf16" in _flags:
        config.available_features.add("avx512bf16")
        if "amx_bf16" in _flags and "amx_tile" in _flags:
            config.available_features.add("amx")

# `ptxas`: the CUDA assembler is installed (PTX tests assemble and check).
if os.path.exists(os.path.join(config.cuda_root, "bin", "ptxas")):
    config.available_features.add("ptxas")
config.substitutions.append(("%ptxas", os.path.join(config.cuda_root, "bin", "ptxas")))

# `cuda-device`: a GPU and its driver are present (end-to-end GPU tests).
if shutil.which("nvidia-smi") and lit.util.which("nvidia-smi"):
    try:
        import subprocess
        subprocess.run(["nvidia-smi", "-L"], check=True,
                       capture_output=True, timeout=20)
        config.available_features.add("cuda-device")
    except Exception:
        pass
