#!/usr/bin/env python3
"""Writes .npy files for the tests without numpy.

npy.py OUT DESCR SHAPE VALUE      a full array: descr '<f4', '<f2', '<V2'
                                  (bfloat16), '|b1' or '|i1' (int8),
                                  shape '2,3', every element VALUE
npy.py OUT --bad-magic            a file that is not .npy
npy.py OUT --truncated [SHAPE]    a valid f32 header (default shape 4,4) with
                                  10 bytes of data
npy.py OUT --fortran              a Fortran-ordered array
npy.py OUT --tail-ones SHAPE N    f32 zeros but for the last N elements (1)
npy.py OUT --ints SHAPE V1,V2,... an int32 ('<i4') array of those values
npy.py OUT --one-nan SHAPE N      f32 ((7i mod 11) - 5) / 8 at element i,
                                  but NaN at element N
"""
import struct
import sys


def header(descr, shape, fortran=False):
    dims = ",".join(str(d) for d in shape) + ("," if len(shape) == 1 else "")
    h = "{'descr': '%s', 'fortran_order': %s, 'shape': (%s), }" % (
        descr, "True" if fortran else "False", dims)
    h += " " * ((64 - (10 + len(h) + 1) % 64) % 64) + "\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(h)) + h.encode()


def main():
    out = sys.argv[1]
    if sys.argv[2] == "--bad-magic":
        data = b"not a numpy file at all"
    elif sys.argv[2] == "--truncated":
        shape = [int(s) for s in sys.argv[3].split(",")] if len(sys.argv) > 3 else [4, 4]
        data = header("<f4", shape) + b"\0" * 10
    elif sys.argv[2] == "--tail-ones":
        shape, ones = [int(s) for s in sys.argv[3].split(",")], int(sys.argv[4])
        n = 1
        for d in shape:
            n *= d
        data = header("<f4", shape) + b"\0" * (4 * (n - ones)) + struct.pack("<f", 1.0) * ones
    elif sys.argv[2] == "--ints":
        shape = [int(s) for s in sys.argv[3].split(",")]
        values = [int(v) for v in sys.argv[4].split(",")]
        data = header("<i4", shape) + struct.pack("<%di" % len(values), *values)
    elif sys.argv[2] == "--one-nan":
        shape, at = [int(s) for s in sys.argv[3].split(",")], int(sys.argv[4])
        n = 1
        for d in shape:
            n *= d
        values = [float("nan") if i == at else ((7 * i) % 11 - 5) / 8 for i in range(n)]
        data = header("<f4", shape) + struct.pack("<%df" % n, *values)
    elif sys.argv[2] == "--fortran":
        data = header("<f4", [2, 2], fortran=True) + b"\0" * 16
    else:
        descr, shape, value = sys.argv[2], [int(s) for s in sys.argv[3].split(",")], float(sys.argv[4])
        n = 1
        for d in shape:
            n *= d
        if descr == "<V2":  # bfloat16: the upper half of the f32 bits
            bits = struct.unpack("<I", struct.pack("<f", value))[0] >> 16
            data = header(descr, shape) + struct.pack("<%dH" % n, *([bits] * n))
        else:
            fmt = {"<f4": "<f", "<f2": "<e", "|b1": "<?", "|i1": "<b"}[descr]
            cast = {"|b1": bool, "|i1": int}.get(descr, float)
            data = header(descr, shape) + struct.pack("<%d%s" % (n, fmt[1]), *([cast(value)] * n))
    with open(out, "wb") as f:
        f.write(data)


if __name__ == "__main__":
    main()
