"""Situation passport: `method` is the one-call method, `protocol` turns a declared stall into constraint text,
`records` holds the passport and reply schemas.

`conf/method/passport.yaml` names `baselines.passport.SituationPassport`, the same `_target_` as before the
package existed, so the run fingerprint is unchanged."""

from baselines.passport.method import SituationPassport

__all__ = ["SituationPassport"]
