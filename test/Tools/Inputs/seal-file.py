"""Appends the file seal (attn-mlir/Artifact/Format.h) to each shared
object given: FNV-1a (64-bit) of every byte of the file, as
`\\nattn-mlir-seal fnv1a64=<16 hex digits>\\n`. attn-compile seals the
artifacts it writes; tests seal the artifacts they build by hand (the seal
guards against damage, not against whoever can write the file).
  usage: seal-file.py FILE.so..."""
import sys


def fnv1a64(data):
    h = 14695981039346656037
    for b in data:
        h = ((h ^ b) * 1099511628211) & 0xFFFFFFFFFFFFFFFF
    return h


for path in sys.argv[1:]:
    with open(path, "rb") as f:
        data = f.read()
    with open(path, "ab") as f:
        f.write(b"\nattn-mlir-seal fnv1a64=%016x\n" % fnv1a64(data))
