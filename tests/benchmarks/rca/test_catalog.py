import pytest

from pos_bench.benchmarks.rca.catalog import FAULT_TYPES, judge, norm_entity, norm_fault_type


def test_catalog_has_the_29_ids():
    assert len(FAULT_TYPES) == 29 and all(meaning for meaning in FAULT_TYPES.values())


@pytest.mark.parametrize(
    ("submitted", "normalised"),
    [
        ("F014-httpError5xx", "httpError5xx"),
        ("f3-slowsql", "slowSQL"),
        ("  NODECPUHIGH ", "nodeCpuHigh"),
        ("F001-F002-podCrashLoop", None),
        ("memoryLeak", None),
        ("http error 5xx", None),
        ("", None),
    ],
)
def test_fault_type_normalisation(submitted, normalised):
    assert norm_fault_type(submitted) == normalised


@pytest.mark.parametrize(
    ("entity", "fault", "entity_ok", "type_ok"),
    [
        ("  Cart ", "F008-slowSQL", True, True),
        ("cart", "slowsql", True, True),
        ("cart\t\n", "fullGC", True, False),
        ("cart-7d9f-x1", "slowSQL", False, True),
        ("cart::/oteldemo.CartService/GetCart", "slowSQL", False, True),
        ("cart", "not-a-type", True, False),
        ("cn-hongkong.10.0.1.69", "nodeCpuHigh", False, False),
    ],
)
def test_judge_matches_normalised_entity_and_type(entity, fault, entity_ok, type_ok):
    verdict = judge(entity, fault, ["cart"], ["F008-slowSQL"])
    assert (verdict.entity_correct, verdict.type_correct, verdict.joint) == (
        entity_ok,
        type_ok,
        entity_ok and type_ok,
    )


def test_entities_collapse_inner_whitespace_and_any_label_counts():
    assert norm_entity("  Node   A ") == "node a"
    verdict = judge(
        "CN-HONGKONG.10.0.1.69", "nodeCpuHigh", ["cart", "cn-hongkong.10.0.1.69"], ["slowSQL", "nodeCpuHigh"]
    )
    assert verdict.joint
