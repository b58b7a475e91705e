"""mini-LOCA truth (issue 28): the records and files its checker reads, recorded per step, with claims scored
against them; the setting turns it off."""

from __future__ import annotations

from pos_bench.benchmarks.loca.mini.benchmark import LocaBenchmark, generate
from pos_bench.benchmarks.loca.mini.inventory import HEADER, OUTPUT
from pos_bench.protocols import TruthfulEnv
from pos_bench.truth import Claim, Fact, judge, step_accuracy
from pos_bench.types import ToolCall


def test_the_truth_follows_the_workspace_and_claims_score_against_it() -> None:
    bench = LocaBenchmark(families=["inventory_alert"], seeds=[3], truth=True)
    task = bench.tasks()[0]
    rows = generate("inventory_alert", 3, "8k").truth["rows"]
    sku, _, stock, threshold, _ = rows[0]
    env = bench.make_env(None)
    assert isinstance(env, TruthfulEnv)
    try:
        env.reset(task)
        before = env.truth()
        assert Fact(sku.lower(), "stock", str(stock)) in before.goal
        claims = [Claim(sku, f"stock: {stock}"), Claim(sku, f"reorder threshold is {threshold + 5}")]
        assert [j.verdict for j in judge(claims, before)] == ["true", "false"]
        path = f"/workspace/{OUTPUT}"
        assert step_accuracy(0, [Claim(path, "written")], before).invented == (path,)  # not written yet
        env.step(ToolCall("sheets_write_csv", {"path": path, "header": list(HEADER), "rows": rows}))
        after = env.truth()
        assert Fact(path, "exists", "true") in after.goal
        assert [j.verdict for j in judge([Claim(path, "written")], after)] == ["true"]
    finally:
        env.close()
    assert LocaBenchmark(families=["inventory_alert"], truth=False).make_env(None).truth() is None
