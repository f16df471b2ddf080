"""Seals the metadata of a hand-made artifact source (a C file defining
attn_mlir_metadata as string literals without the `end` record): appends
`end checksum=...` as attn-mlir/Artifact/Format.h defines it (FNV-1a 64 of
the records), so tests can build artifacts the runtime accepts.
  usage: seal-metadata.py IN.c > OUT.c
         seal-metadata.py --records 'REC|REC|...' [--function NAME]
                          [--object NAME=TEXT] > OUT.c
           a C file whose metadata is `attn-mlir-artifact 2`, the records
           (| separates them) and the seal, defining function NAME (f) and
           the data object NAME holding TEXT without a terminator"""
import codecs
import re
import sys

if sys.argv[1] == "--records":
    opts = dict(zip(sys.argv[3::2], sys.argv[4::2]))
    lit = "attn-mlir-artifact 2\\n" + "".join(r + "\\n" for r in sys.argv[2].split("|"))
    src = ('const char attn_mlir_metadata[] = "%s";\nvoid %s(void *a, void *b) {}\n'
           % (lit, opts.get("--function", "f")))
    if "--object" in opts:  # NAME=TEXT: exactly TEXT's bytes, no terminator
        name, text = opts["--object"].split("=", 1)
        src += 'const char %s[%d] = "%s";\n' % (name, len(text), text)
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
