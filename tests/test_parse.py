from hypothesis import HealthCheck, given, settings

from pos_bench.parse import ParseFailure, extract_json_object, parse_decision
from pos_bench.types import Decision, Observation, ToolCall
from tests.replies import parse_seconds, replies

COMMANDS = Observation(text="", actions=("look", "go to desk 1"))
TOOLS = Observation(text="", tools=({"type": "function", "function": {"name": "ask_history"}},))


def test_command_reply_parses_with_fences_and_prose():
    text = 'Sure!\n```json\n{"thought": "go", "action": "go to desk 1"}\n```'
    assert parse_decision(text, COMMANDS) == Decision(thought="go", action="go to desk 1")


def test_extra_keys_are_kept_for_the_method():
    decision = parse_decision('{"thought": "t", "action": "look", "subgoal": "find mug"}', COMMANDS)
    assert decision.extra == {"subgoal": "find mug"}


def test_missing_action_and_non_json_are_failures():
    assert isinstance(parse_decision('{"thought": "done", "answer": "x"}', COMMANDS), ParseFailure)
    assert isinstance(parse_decision("I will look around.", COMMANDS), ParseFailure)
    assert isinstance(parse_decision('{"action": ""}', COMMANDS), ParseFailure)


def test_tool_action_needs_a_name_and_object_arguments():
    ok = parse_decision(
        '{"thought": "", "action": {"name": "ask_history", "arguments": {"question": "q"}}}', TOOLS
    )
    assert ok.action == ToolCall("ask_history", {"question": "q"})
    as_string = parse_decision(
        '{"action": {"name": "ask_history", "arguments": "{\\"question\\": \\"q\\"}"}}', TOOLS
    )
    assert as_string.action == ToolCall("ask_history", {"question": "q"})
    assert isinstance(parse_decision('{"action": {"arguments": {}}}', TOOLS), ParseFailure)
    assert isinstance(parse_decision('{"action": {"name": "x", "arguments": [1]}}', TOOLS), ParseFailure)


def test_meta_actions_become_memory_operations():
    decision = parse_decision('{"thought": "", "action": "glimpse 3"}', COMMANDS, meta_actions=("glimpse",))
    assert decision.action is None and decision.meta == "glimpse 3"
    tool_meta = parse_decision(
        '{"action": {"name": "retrieve", "arguments": {"ids": [1]}}}', TOOLS, ("retrieve",)
    )
    assert tool_meta.action is None and tool_meta.meta == ToolCall("retrieve", {"ids": [1]})


def test_extract_skips_broken_objects():
    assert extract_json_object('{broken {"a": 1}') == {"a": 1}
    assert extract_json_object("[1, 2]") is None


def test_multi_action_replies_keep_every_action_in_order():
    text = '{"thought": "batch", "actions": [{"name": "a", "arguments": {}}, {"name": "b", "arguments": {"x": 1}}]}'
    decision = parse_decision(text, TOOLS, max_actions=3)
    assert decision.actions == (ToolCall("a", {}), ToolCall("b", {"x": 1}))
    assert decision.only(ToolCall("b", {"x": 1})).actions == (ToolCall("b", {"x": 1}),)
    single = parse_decision('{"thought": "", "action": {"name": "a"}}', TOOLS, max_actions=3)
    assert single.actions == (ToolCall("a", {}),)


def test_multi_action_failures_are_missing_actions_and_json_failures_are_not():
    empty = parse_decision('{"thought": "", "actions": []}', TOOLS, max_actions=3)
    assert isinstance(empty, ParseFailure) and empty.json_readable
    prose = parse_decision("I would query the logs.", TOOLS, max_actions=3)
    assert isinstance(prose, ParseFailure) and not prose.json_readable
    mixed = parse_decision(
        '{"actions": [{"name": "glimpse", "arguments": {}}, {"name": "a"}]}',
        TOOLS,
        ("glimpse",),
        max_actions=3,
    )
    assert isinstance(mixed, ParseFailure) and "only action" in mixed.problem


def test_hostile_replies_are_parse_failures_in_bounded_time():
    deep = "{" * 200_000
    nested = '{"action":' * 5_000 + '"look"' + "}" * 5_000
    for text in (deep, nested, "[" * 100_000, '{"thought": "x' + "y" * 3_000_000 + '", "action": "look"}'):
        assert isinstance(parse_decision(text, COMMANDS), ParseFailure)
        assert parse_seconds(lambda t: parse_decision(t, COMMANDS), text) < 0.05


def test_a_lone_surrogate_still_parses():
    decision = parse_decision('{"thought": "\ud800", "action": "look"}', COMMANDS)
    assert decision == Decision(thought="\ud800", action="look")


@settings(max_examples=300, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(replies())
def test_any_reply_gives_a_decision_or_a_parse_failure(text):
    for obs in (COMMANDS, TOOLS):
        assert isinstance(parse_decision(text, obs, ("glimpse",)), (Decision, ParseFailure))
        assert parse_seconds(lambda t, obs=obs: parse_decision(t, obs), text) < 0.05


def test_where_a_reply_without_a_tool_call_is_final_it_becomes_a_plain_text_action():
    final = {"no_tool_call_is_final": True}
    assert parse_decision('{"thought": "t", "action": "the report is written"}', TOOLS, **final).action == (
        "the report is written"
    )
    assert parse_decision('{"thought": "nothing more to do"}', TOOLS, **final).action == ""
    assert parse_decision('{"thought": "t", "action": null}', TOOLS, **final).action == ""
    call = parse_decision(
        '{"thought": "t", "action": {"name": "ask_history", "arguments": {}}}', TOOLS, **final
    )
    assert call.action == ToolCall("ask_history", {})
    assert isinstance(parse_decision('{"thought": "t", "action": "prose"}', TOOLS), ParseFailure)
    assert isinstance(parse_decision("no json at all", TOOLS, **final), ParseFailure)
