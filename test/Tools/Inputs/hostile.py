"""Hostile inputs for attn-run: each subcommand builds bad files, runs
attn-run on them and prints one line per case with the exit status and the
first line of stderr, or 'SIGNAL n' when attn-run died of a signal (which
is always a bug: the tests check for none).

  hostile.py cut ATTN_RUN ARTIFACT TMP N      N truncated copies
  hostile.py driver ATTN_RUN DRIVER TMP N CUDA_ARTIFACT
                                              ATTN_CUDA_DRIVER truncated N ways
  hostile.py flip ATTN_RUN ARTIFACT TMP N      N copies with one bit flipped
                                              (at positions spread over the file)
  hostile.py edit ATTN_RUN ARTIFACT TMP OLD NEW [ARGS...]
                                              a same-length edit of the bytes
  hostile.py npy ATTN_RUN ARTIFACT TMP SHAPE DATA_BYTES
                                              a .npy header that lies
"""
import os
import shutil
import struct
import subprocess
import sys
import time


def run(cmd, env=None):
    t0 = time.time()
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)
    first = (p.stderr.strip().splitlines() or [""])[0]
    status = f"SIGNAL {-p.returncode}" if p.returncode < 0 else f"exit {p.returncode}"
    return status, first, time.time() - t0


def summarize(results):
    signals = sum(1 for s, _, _ in results if s.startswith("SIGNAL"))
    clear = sum(1 for s, f, _ in results if s == "exit 2" and f.startswith("attn-run: error: "))
    print(f"{len(results)} cases: {clear} clear errors, {signals} signals")
    for s, f, _ in results:
        if not (s == "exit 2" and f.startswith("attn-run: error: ")):
            print(f"UNEXPECTED {s}: {f}")


def cut_points(size, n):
    return sorted({max(0, min(size - 1, size * i // n)) for i in range(n)})


def cut(attn_run, artifact, tmp, n):
    data = open(artifact, "rb").read()
    results = []
    for c in cut_points(len(data), int(n)):
        path = f"{tmp}.{c}.so"
        open(path, "wb").write(data[:c])
        results.append(run([attn_run, path, "--check"]))
        os.unlink(path)
    summarize(results)


def driver(attn_run, artifact, tmp, n, cuda_artifact):
    data = open(artifact, "rb").read()
    results = []
    for c in cut_points(len(data), int(n)):
        path = f"{tmp}.{c}.so"
        open(path, "wb").write(data[:c])
        env = dict(os.environ, ATTN_CUDA_DRIVER=path)
        results.append(run([attn_run, cuda_artifact, "--device", "cuda"], env))
        os.unlink(path)
    summarize(results)


def flip(attn_run, artifact, tmp, n):
    data = open(artifact, "rb").read()
    results = []
    n = int(n)
    for i in range(n):
        # Positions spread evenly over the file, each a different bit.
        pos = len(data) * i // n
        damaged = bytearray(data)
        damaged[pos] ^= 1 << (i % 8)
        path = f"{tmp}.{pos}.so"
        open(path, "wb").write(damaged)
        results.append(run([attn_run, path, "--check"]))
        os.unlink(path)
    summarize(results)


def edit(attn_run, artifact, tmp, old, new, *args):
    assert len(old) == len(new), "a same-length edit"
    data = open(artifact, "rb").read()
    assert data.count(old.encode()) == 1, f"{old!r} occurs {data.count(old.encode())} times"
    open(tmp, "wb").write(data.replace(old.encode(), new.encode()))
    status, first, _ = run([attn_run, tmp, *args])
    print(status, first)


def npy(attn_run, artifact, tmp, shape, nbytes):
    dims = tuple(int(d) for d in shape.split(","))
    h = "{'descr': '<f4', 'fortran_order': False, 'shape': %s, }" % (dims,)
    h += " " * ((64 - (10 + len(h) + 1) % 64) % 64) + "\n"
    with open(tmp, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(h)) + h.encode())
        f.write(b"\0" * int(nbytes))
    status, first, secs = run([attn_run, artifact, "--input", f"q={tmp}"])
    print(status, first, "(fast)" if secs < 2 else f"(slow: {secs:.1f} s)")


if __name__ == "__main__":
    {"cut": cut, "driver": driver, "flip": flip, "edit": edit, "npy": npy}[sys.argv[1]](*sys.argv[2:])
