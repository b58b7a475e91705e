"""`python -m pos_bench.standin [--port 8000] [--tokens-per-s 15] …`: the stand-in endpoint (`command.py`)."""

import sys

from pos_bench.standin.command import main

if __name__ == "__main__":
    sys.exit(main())
