"""Seals the metadata of a hand-made artifact source (a C file defining
attn_mlir_metadata as string literals without the `end` record): appends
`end checksum=...` as attn-mlir/Artifact/Format.h defines it (FNV-1a 64 of
the records), so tests can build artifacts the runtime accepts.
  usage: seal-metadata.py IN.c > OUT.c
         seal-metadata.py --records 'REC|REC|...'|@FILE [--function NAME]
                          [--object NAME=TEXT]... [--image NAME=TEXT]... > OUT.c
           a C file whose metadata is `attn-mlir-artifact 6`, the records
           (| separates them; @FILE: FILE's lines) and the seal, defining entry NAME (f,
           as _mlir_ciface_NAME), per
           --object a data object NAME holding exactly TEXT's bytes (no
           terminator), per --image one holding TEXT and a NUL
           (len(TEXT) + 1 bytes: a PTX kernel image)"""
import codecs
import re
import sys

if sys.argv[1] == "--records":
    opts = {"--function": ["f"], "--object": [], "--image": []}
    for key, value in zip(sys.argv[3::2], sys.argv[4::2]):
        if key not in opts:
            sys.exit("unknown option " + key)
        opts[key] = (opts[key] if key in ("--object", "--image") else []) + [value]
    recs = (open(sys.argv[2][1:]).read().splitlines() if sys.argv[2][:1] == "@"
            else sys.argv[2].split("|"))
    lit = "attn-mlir-artifact 6\\n" + "".join(r + "\\n" for r in recs)
    # An entry NAME is called through its C interface (Format.h).
    src = ('const char attn_mlir_metadata[] = "%s";\n'
           'void _mlir_ciface_%s(void *a, void *b) {}\n'
           % (lit, opts["--function"][-1]))
    for kind in ("--object", "--image"):
        for spec in opts[kind]:
            name, text = spec.split("=", 1)
            size = len(text) + (kind == "--image")
            src += 'const char %s[%d] = "%s";\n' % (name, size, text)
else:
    src = open(sys.argv[1]).read()
m = re.search(r"attn_mlir_metadata\[\]\s*=\s*((?:\s*\"(?:[^\"\\]|\\.)*\")+)\s*;", src)
if not m:
    sys.exit("no attn_mlir_metadata string in " + sys.argv[1])
records = "".join(codecs.decode(p, "unicode_escape")
                  for p in re.findall(r"\"((?:[^\"\\]|\\.)*)\"", m.group(1)))
h = 14695981039346656037
for b in records.encode():
    h = ((h ^ b) * 1099511628211) % (1 << 64)
end = '\n    "end checksum=%016x\\n"' % h
sys.stdout.write(src[:m.end(1)] + end + src[m.end(1):])
