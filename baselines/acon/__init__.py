"""ACON (SPEC-BASE §4): `method` is the compressing method, `guidelines` the fixed compression guidelines.

`conf/method/acon.yaml` names `baselines.acon.Acon`, the same `_target_` as before the package existed, so the
run fingerprint of an ACON run is unchanged."""

from baselines.acon.method import Acon

__all__ = ["Acon"]
