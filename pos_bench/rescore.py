"""`python -m pos_bench.rescore` is now `python -m pos_bench.runner.rescore`; the old command still works."""

import sys

from pos_bench.runner.rescore import main

if __name__ == "__main__":
    print("note: the command is now `python -m pos_bench.runner.rescore`", file=sys.stderr)
    raise SystemExit(main())
