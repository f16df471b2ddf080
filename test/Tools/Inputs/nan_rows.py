#!/usr/bin/env python3
"""nan_rows.py OUT.npy: the rows (along the second-to-last axis of a
[..., T, D] output) that hold a NaN, as ranges: "NaN rows: 40-63"."""
import sys

import numpy as np

o = np.load(sys.argv[1])
rows = np.isnan(o).any(axis=-1).reshape(-1, o.shape[-2]).any(axis=0)
ranges, start = [], None
for i, nan in enumerate(list(rows) + [False]):
    if nan and start is None:
        start = i
    elif not nan and start is not None:
        ranges.append(f"{start}-{i - 1}" if i - 1 > start else str(start))
        start = None
print("NaN rows:", ", ".join(ranges) if ranges else "none")
