"""pos_bench: explicit belief states (PoS) against context-management baselines, one agent loop for all.

Importing the package does nothing visible; it only re-exports the records and protocols.
"""

from pos_bench.protocols import Benchmark, Env, Method, MethodBase, Model
from pos_bench.types import (
    Action,
    Brief,
    Decision,
    EpisodeResult,
    Message,
    Observation,
    Prompt,
    Reply,
    Score,
    Step,
    Task,
    ToolCall,
    Usage,
)

__version__ = "0.1.0"

__all__ = [
    "Action",
    "Benchmark",
    "Brief",
    "Decision",
    "Env",
    "EpisodeResult",
    "Message",
    "Method",
    "MethodBase",
    "Model",
    "Observation",
    "Prompt",
    "Reply",
    "Score",
    "Step",
    "Task",
    "ToolCall",
    "Usage",
]
