"""`protocols.implements`: a protocol's check decided once per class, with isinstance's answer."""

from __future__ import annotations

from baselines.raw import RawHistory
from pos_bench.protocols import ClaimingMethod, EventfulMethod, implements


class Claiming(RawHistory):
    def claims(self):
        return ()


def test_implements_answers_as_isinstance_for_each_class() -> None:
    plain, claiming = RawHistory.__new__(RawHistory), Claiming.__new__(Claiming)
    for _ in range(2):  # the second answer comes from the class's kept one
        assert implements(claiming, ClaimingMethod) and isinstance(claiming, ClaimingMethod)
        assert not implements(plain, ClaimingMethod) and not isinstance(plain, ClaimingMethod)
        assert implements(plain, EventfulMethod) == isinstance(plain, EventfulMethod)
