"""PACE (SPEC-BASE §5): `method` is the granularity-switching method, `encoder` the sentence encoders it ranks
older steps with."""

from baselines.pace.method import Pace

__all__ = ["Pace"]
