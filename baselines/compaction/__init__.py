"""inspect_ai's compaction strategies (summary, edit, trim, auto; native refused) and its memory tool as a
pos_bench baseline (issue 42; docs/compaction.md)."""

from baselines.compaction.method import Compaction

__all__ = ["Compaction"]
