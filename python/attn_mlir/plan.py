"""python -m attn_mlir.plan: the cost planner's command line (see planner)."""
import sys

from .planner import main

if __name__ == "__main__":
    sys.exit(main())
