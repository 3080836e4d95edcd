"""``python -m mcoder.warmstart``: the command line of ``mcoder.cli.warmstart``."""

import sys

from mcoder.cli.warmstart import main

if __name__ == "__main__":
    sys.exit(main())
