"""An episode's kept replies: every answer and refusal it met, under the cache's key, read back by key."""

from __future__ import annotations

import pytest

from pos_bench.models.cache import canonical_request, identity, request_key
from pos_bench.models.kept import RESPONSES, Kept, ResponseLog, read_kept
from pos_bench.models.retry import RequestRefused
from pos_bench.models.scripted import ScriptedModel
from pos_bench.types import Message, Prompt

PROMPT = Prompt((Message("system", "s"), Message("user", "Choose.")), max_tokens=16)


class TooLong(RequestRefused):
    pass


class Refuses(ScriptedModel):
    def generate(self, prompt, *, role="agent"):
        raise TooLong("the prompt exceeds the context")


def test_replies_and_refusals_are_kept_under_the_cache_key(tmp_path):
    path = tmp_path / "episodes" / "t" / RESPONSES
    log = ResponseLog(path, redact=lambda text: text.replace("secret-value", "[redacted]"))
    model = Kept(ScriptedModel(default='{"action": "secret-value"}'), log)
    reply = model.generate(PROMPT, role="agent")
    with pytest.raises(TooLong):
        Kept(Refuses(), log).generate(PROMPT.extended(Message("user", "more")), role="belief")
    kept = read_kept(tmp_path)
    key = request_key(canonical_request(identity(model.describe()), PROMPT))
    assert kept[key].text == '{"action": "[redacted]"}' and kept[key].usage == reply.usage
    assert kept[key].reply().cached and kept[key].role == "agent"
    (refused,) = [k for k in kept.values() if k.refused]
    assert refused.refused == "TooLong" and refused.text == "the prompt exceeds the context"
    assert b"secret-value" not in path.read_bytes()


def test_a_torn_last_line_is_skipped(tmp_path):
    path = tmp_path / "episodes" / "t" / RESPONSES
    Kept(ScriptedModel(), ResponseLog(path)).generate(PROMPT)
    with path.open("a") as f:
        f.write('{"key": "abc", "text": "cut of')
    assert len(read_kept(tmp_path)) == 1
