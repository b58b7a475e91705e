import sys

from pos_bench.estimate import main

sys.exit(main())
