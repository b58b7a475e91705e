from pos_bench.parse import ParseFailure, extract_json_object, parse_decision
from pos_bench.types import Decision, Observation, ToolCall

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
