"""inspect_ai's extension entry point (`[project.entry-points.inspect_ai]`): importing this registers the
tasks `pos_bench/<bench>` and the agent `pos_bench/method_agent`."""

from pos_bench.inspect.agent import method_agent  # noqa: F401
from pos_bench.inspect.tasks import (  # noqa: F401
    alfworld,
    clindiag,
    loca,
    loca_mini,
    rca100,
    rca_synthetic,
    toy,
)
