from hypothesis import HealthCheck, given, settings
from pydantic import BaseModel

from pos_bench.models.scripted import ScriptedModel
from pos_bench.structured import StructuredFailure, ask, read_structured
from pos_bench.types import Message, Prompt
from tests.replies import parse_seconds, replies

PROMPT = Prompt(messages=(Message("user", "give me a count"),))


class Count(BaseModel):
    count: int


def test_valid_reply_becomes_a_typed_object_and_carries_the_schema():
    model = ScriptedModel({"belief": ['{"count": 3}']})
    assert ask(model, PROMPT, Count, role="belief") == Count(count=3)
    role, sent = model.prompts[0]
    assert role == "belief" and sent.schema == Count.model_json_schema()


def test_invalid_reply_gets_one_repair_quoting_the_error():
    model = ScriptedModel({"belief": ['{"count": "many"}', '{"count": 4}']})
    assert ask(model, PROMPT, Count, role="belief", max_repairs=1) == Count(count=4)
    repair = model.prompts[1][1].messages
    assert repair[-2].content == '{"count": "many"}' and "schema error" in repair[-1].content


def test_semantic_check_and_typed_failure():
    model = ScriptedModel({"belief": ['{"count": -1}']})
    result = ask(
        model,
        PROMPT,
        Count,
        role="belief",
        max_repairs=2,
        check=lambda c: "count must be ≥ 0" if c.count < 0 else None,
    )
    assert isinstance(result, StructuredFailure)
    assert result.problem == "count must be ≥ 0" and len(result.replies) == 3


def test_no_repairs_means_one_call():
    model = ScriptedModel({"belief": ["not json"]})
    assert isinstance(ask(model, PROMPT, Count, role="belief", max_repairs=0), StructuredFailure)
    assert model.calls == {"belief": 1}


@settings(max_examples=200, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(replies())
def test_any_reply_gives_an_object_or_a_problem(text):
    from pos_bench.pos.belief import BeliefDelta

    for output in (Count, BeliefDelta):
        assert isinstance(read_structured(text, output), (output, str))
        assert parse_seconds(lambda t, output=output: read_structured(t, output), text) < 0.05


def test_a_deeply_nested_reply_is_a_problem_not_a_crash():
    assert isinstance(read_structured('{"count": ' + "[" * 50_000 + "]" * 50_000 + "}", Count), str)


def test_every_ask_sends_its_types_own_schema_also_for_types_that_share_a_name():
    def count_type(field_type: type) -> type[BaseModel]:
        class Count(BaseModel):  # the same name, a different shape each time
            count: field_type  # type: ignore[valid-type]

        return Count

    for output, reply in ((count_type(int), '{"count": 3}'), (count_type(str), '{"count": "three"}')):
        for _ in range(2):  # built once, sent as pydantic's own schema every time
            model = ScriptedModel({"belief": [reply]})
            ask(model, PROMPT, output, role="belief")
            assert model.prompts[0][1].schema == output.model_json_schema()
