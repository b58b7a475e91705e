"""The reading rule and the belief-accuracy measures on hand-built worlds (issue 28)."""

from __future__ import annotations

import pytest

from pos_bench.benchmarks.household import Household, household_truth
from pos_bench.truth import (
    AGENT,
    EXISTS,
    LITERAL,
    AuditedUpdate,
    Claim,
    Fact,
    Observed,
    Term,
    WorldTruth,
    audit_accuracy,
    episode_accuracy,
    invented,
    judge,
    name,
    read,
    step_accuracy,
)


def kitchen(*, mug_at: str = "cabinet 1", held: str = "", opened: bool = False, clean: bool = False):
    return household_truth(
        Household(
            locations={"mug 1": (mug_at,) if mug_at else (), "apple 1": ("countertop 1",)},
            receptacles=("cabinet 1", "countertop 1", "sinkbasin 1"),
            held=held,
            at=("countertop 1",),
            openable={"cabinet 1": opened},
            properties={"mug 1": {"clean": clean}},
        ),
        "put a clean mug in cabinet.",
    )


@pytest.mark.parametrize(
    ("raw", "normal"),
    [
        ("The Mug 1", "mug 1"),
        ("mug1", "mug 1"),
        ("  desk   2 ", "desk 2"),
        ("You", AGENT),
        ("SKU-3f2a", "sku-3f2a"),
    ],
)
def test_names_are_normalised_by_one_rule(raw: str, normal: str) -> None:
    assert name(raw) == normal


@pytest.mark.parametrize(
    ("claim", "facts"),
    [
        (Claim("mug 1", "in", "cabinet 1"), {Fact("mug 1", "location", "cabinet 1")}),
        (Claim("mug 1", "mug 1 is inside cabinet 1"), {Fact("mug 1", "location", "cabinet 1")}),
        (Claim("Mug1", "held by the agent"), {Fact("mug 1", "location", AGENT)}),
        (Claim("cabinet 1", "closed"), {Fact("cabinet 1", "open", "false")}),
        (Claim("cabinet 1", "is open"), {Fact("cabinet 1", "open", "true")}),
        (Claim("mug 1", "not clean"), {Fact("mug 1", "clean", "false")}),
        (
            Claim("mug 1", "clean and on countertop 1"),
            {Fact("mug 1", "clean", "true"), Fact("mug 1", "location", "countertop 1")},
        ),
        (Claim("I", "holding", "apple 1"), {Fact(AGENT, "holding", "apple 1")}),
        (Claim("agent", "at countertop 1"), {Fact(AGENT, "location", "countertop 1")}),
        (Claim("mug 1", "location unknown"), set()),
        (Claim("mug 1"), {Fact("mug 1", EXISTS, "true")}),
        (Claim("kitchen", "in cabinet 1"), set()),
        (Claim("mug 9", "in cabinet 1"), {Fact("mug 9", EXISTS, "true")}),
        (Claim("mug 1", "in", "table 2"), {Fact("table 2", EXISTS, "true")}),
        (Claim("1234567890", "1234567890", "1234567890"), {Fact("1234567890", EXISTS, "true")}),
    ],
)
def test_a_claim_reads_as_the_facts_its_words_state(claim: Claim, facts: set) -> None:
    assert set(read(claim, kitchen())) == facts


def test_a_literal_term_takes_the_value_written_after_its_phrase() -> None:
    truth = WorldTruth(
        facts=frozenset({Fact("sku-1", "stock", "4")}),
        entities=frozenset({"sku-1"}),
        terms=(Term("stock", LITERAL, ("stock",)),),
    )
    assert read(Claim("SKU-1", "stock: 4"), truth) == (Fact("sku-1", "stock", "4"),)
    assert read(Claim("sku-1", "stock is 7."), truth) == (Fact("sku-1", "stock", "7"),)
    assert [j.verdict for j in judge([Claim("sku-1", "stock = 7")], truth)] == ["false"]


def test_verdicts_are_true_false_or_unscored_against_the_truth() -> None:
    claims = [
        Claim("mug 1", "in cabinet 1"),  # true
        Claim("mug 1", "on countertop 1"),  # false: the mug is in the cabinet
        Claim("cabinet 1", "open"),  # false: closed
        Claim("apple 1", "clean"),  # unscored: the truth says nothing of the apple's cleanliness
    ]
    assert [j.verdict for j in judge(claims, kitchen())] == ["true", "false", "false", "unscored"]


def test_invented_entities_are_unknown_names_of_the_worlds_shape() -> None:
    claims = [
        Claim("mug 1"),
        Claim("mug 4", "in cabinet 1"),
        Claim("kitchen"),
        Claim("apple 1", "on", "table 2"),
        Claim("1234567890"),
        Claim("the bed 1, the desk 2"),
    ]
    assert invented(claims, kitchen()) == {"mug 4", "table 2", "1234567890"}


def test_a_claim_about_an_invented_entity_is_false_and_weighs_in_precision() -> None:
    claims = [
        Claim("mug 1", "in cabinet 1"),  # true
        Claim("mug 1"),  # true: the mug exists
        Claim("desk4", "id: 1234567890"),  # false: there is no desk 4, whatever the text says
        Claim("desk4", "desk4, ", "desk4"),  # false again: the same invented desk, a second claim
        Claim("1234567890", "on countertop 1"),  # false: a filler id names nothing
        Claim("apple 1", "inside", "cabinet 9"),  # false: the apple points at an invented cabinet
        Claim("room", "the agent is here"),  # unscored: no number, no one entity of the world
    ]
    judged = judge(claims, kitchen())
    assert [(j.fact.subject, j.verdict) for j in judged] == [
        ("mug 1", "true"),
        ("mug 1", "true"),
        ("desk 4", "false"),
        ("desk 4", "false"),
        ("1234567890", "false"),
        ("cabinet 9", "false"),
    ]
    step = step_accuracy(0, claims, kitchen())
    assert (step.true, step.false, step.unscored, step.precision) == (2, 4, 0, 2 / 6)
    assert step.invented == ("1234567890", "cabinet 9", "desk 4")
    assert step.false_facts == (
        Fact("1234567890", EXISTS, "true"),
        Fact("cabinet 9", EXISTS, "true"),
        Fact("desk 4", EXISTS, "true"),
    )
    # only invented names: precision is defined (zero), never left empty
    assert step_accuracy(0, claims[2:3], kitchen()).precision == 0.0
    assert step_accuracy(0, claims[6:], kitchen()).precision is None


def test_without_a_shape_every_unknown_name_is_invented() -> None:
    truth = WorldTruth(facts=frozenset({Fact("cart", "root_cause", "true")}), entities=frozenset({"cart"}))
    assert [j.verdict for j in judge([Claim("cart"), Claim("kitchen", "root cause")], truth)] == [
        "true",
        "false",
    ]


def test_step_precision_and_recall_over_the_goal_facts() -> None:
    truth = kitchen()
    # the goal (a clean mug in a cabinet) needs: where the mug is, whether it is clean, whether cabinet 1 is open
    assert truth.goal == {
        Fact("mug 1", "location", "cabinet 1"),
        Fact("mug 1", "clean", "false"),
        Fact("cabinet 1", "open", "false"),
    }
    claims = [Claim("mug 1", "in cabinet 1"), Claim("cabinet 1", "open"), Claim("apple 1", "on countertop 1")]
    step = step_accuracy(4, claims, truth)
    assert (step.true, step.false, step.unscored) == (2, 1, 0)
    assert step.precision == 2 / 3
    assert step.recall == 1 / 3
    assert step.false_facts == (Fact("cabinet 1", "open", "true"),)
    assert step_accuracy(0, [Claim("mug 1", "location unknown")], truth).precision is None


def test_a_stale_claim_is_counted_while_held_and_its_persistence_measured() -> None:
    where = Claim("mug 1", "in cabinet 1")
    worlds = [
        kitchen(),
        kitchen(mug_at="", held="mug 1"),
        kitchen(mug_at="", held="mug 1"),
        kitchen(mug_at=""),
    ]
    held = [[where], [where], [where], []]
    result = episode_accuracy([Observed(i, w, tuple(c)) for i, (w, c) in enumerate(zip(worlds, held))])
    stale = Fact("mug 1", "location", "cabinet 1")
    assert [s.stale for s in result.steps] == [(), (stale,), (stale,), ()]
    assert (result.stale_claims, result.stale_persistence) == (1, (2,))
    assert result.precision == 1 / 3


def test_a_claim_false_from_the_start_is_not_stale_and_a_stretch_can_run_to_the_end() -> None:
    wrong = Claim("mug 1", "on countertop 1")
    right_then_wrong = Claim("cabinet 1", "closed")
    worlds = [kitchen(), kitchen(opened=True), kitchen(opened=True)]
    steps = [Observed(i, w, (wrong, right_then_wrong)) for i, w in enumerate(worlds)]
    result = episode_accuracy(steps)
    assert [len(s.stale) for s in result.steps] == [0, 1, 1]
    assert all(Fact("mug 1", "location", "countertop 1") not in s.stale for s in result.steps)
    assert result.stale_persistence == (2,)


def test_a_stale_fact_true_again_ends_its_stretch_and_a_new_one_counts_apart() -> None:
    shut = Claim("cabinet 1", "closed")
    worlds = [kitchen(), kitchen(opened=True), kitchen(), kitchen(opened=True)]
    result = episode_accuracy([Observed(i, w, (shut,)) for i, w in enumerate(worlds)])
    assert [len(s.stale) for s in result.steps] == [0, 1, 0, 1]
    assert (result.stale_claims, result.stale_persistence) == (2, (1, 1))


def test_audit_precision_and_recall_on_false_updates() -> None:
    truth = kitchen()
    good, bad = Claim("mug 1", "in cabinet 1"), Claim("cabinet 1", "open")
    updates = [
        AuditedUpdate(0, "rejected", (), (good, bad), (), truth),  # false, caught
        AuditedUpdate(1, "validated", (), (good, bad), (good, bad), truth),  # false, missed and committed
        AuditedUpdate(2, "repaired", (good,), (good,), (good,), truth),  # true, flagged: a false alarm
        AuditedUpdate(
            3, "validated", (bad,), (bad, good), (bad, good), truth
        ),  # the false fact was there before
    ]
    result = audit_accuracy(updates)
    assert [u.false for u in result.updates] == [True, True, False, False]
    assert (result.false_updates, result.flagged, result.flagged_false, result.committed_false) == (
        2,
        2,
        1,
        1,
    )
    assert (result.precision, result.recall) == (0.5, 0.5)
    assert audit_accuracy([]).precision is None


def test_a_free_text_claim_is_about_the_first_world_entity_it_names() -> None:
    claims = [Claim("", "Found mug 1 inside cabinet 1, which is closed."), Claim("", "Nothing useful here.")]
    assert [read(c, kitchen()) for c in claims] == [
        (Fact("mug 1", "location", "cabinet 1"), Fact("mug 1", "open", "false")),
        (),
    ]
    # every phrase speaks of the subject: "closed" lands on the mug, where the truth leaves it unscored
    assert [j.verdict for j in judge(claims, kitchen())] == ["true", "unscored"]


def test_a_sentence_written_where_a_name_belongs_is_read_as_free_text() -> None:
    """The passport's small-model records put whole sentences in the name field."""
    world = kitchen(held="mug 1")
    assert set(read(Claim("I am at countertop 1 holding mug 1"), world)) == {
        Fact(AGENT, "location", "countertop 1"),
        Fact(AGENT, "holding", "mug 1"),
    }
    assert set(read(Claim("apple 1 sits on countertop 1", "seen at the start"), world)) == {
        Fact("apple 1", "location", "countertop 1")
    }
    assert read(Claim("the world did not change"), world) == ()
    assert [j.verdict for j in judge([Claim("You are holding apple 1")], world)] == ["false"]


def test_a_term_points_at_the_entity_named_after_its_phrase() -> None:
    claim = Claim("agent", "at countertop 1, holding mug 1")
    assert set(read(claim, kitchen())) == {
        Fact(AGENT, "location", "countertop 1"),
        Fact(AGENT, "holding", "mug 1"),
    }
