"""LongHorizon-Harness (SPEC-BASE §7): `method` is the manager → executor → auditor method, `records` the plans,
audit reports and task state it keeps.

`conf/method/lh_harness.yaml` names `baselines.lh_harness.LongHorizonHarness`, the same `_target_` as before the
package existed, so the run fingerprint is unchanged."""

from baselines.lh_harness.method import LongHorizonHarness

__all__ = ["LongHorizonHarness"]
