"""RCA truth (issue 28): the environment records the injected fault's entity and type, and claims about the
root cause are scored against it."""

from __future__ import annotations

import json

import pytest

from pos_bench.benchmarks.rca import data as rca_data
from pos_bench.benchmarks.rca.benchmark import RCAEnv
from pos_bench.protocols import TruthfulEnv
from pos_bench.truth import Claim, Fact, judge
from pos_bench.types import Task


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> rca_data.Dataset:
    return rca_data.synthetic(3, 2, cache=tmp_path_factory.mktemp("rca"))


@pytest.mark.parametrize("index", [0, 1, 2])
def test_the_truth_is_the_injected_fault_and_claims_score_against_it(dataset, index: int) -> None:
    case_id = dataset.ids[index]
    key = json.loads((dataset.answer_key / f"{case_id}.gt.json").read_text(encoding="utf-8"))
    root = key["root_cause_entities"][0]
    fault = key["root_cause_types"][0].split("-", 1)[1]
    env = RCAEnv(dataset, obs_cap=20000)
    assert isinstance(env, TruthfulEnv)
    env.reset(Task(id=case_id))
    truth = env.truth()
    assert truth.goal == {Fact(root, "root_cause", "true"), Fact(root, "fault_type", fault.lower())}
    other = min(e for e in truth.entities if e != root)
    claims = [
        Claim(root, f"the root cause: {fault}"),
        Claim(other, "root cause"),
        Claim(other, "healthy, ruled out"),
    ]
    verdicts = [(j.fact.attribute, j.verdict) for j in judge(claims, truth)]
    assert verdicts == [
        ("root_cause", "true"),
        ("fault_type", "true"),
        ("root_cause", "false"),
        ("root_cause", "true"),
    ]
