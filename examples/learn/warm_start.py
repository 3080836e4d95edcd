"""The supervised warm start, as `make demo` and the benchmarks call it: ``mcoder.warmstart``
(``python -m mcoder.warmstart``), with the same arguments.

    python examples/learn/warm_start.py --problems train.jsonl --out WARM_DIR [--steps 500] [--seed 0]
"""

import sys

from mcoder.cli.warmstart import main

if __name__ == "__main__":
    sys.exit(main())
