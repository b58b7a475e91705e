"""An episode's kept replies: every answer and refusal it met, under the cache's key, read back by key."""

from __future__ import annotations

import contextlib
import gc
import os

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


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="counts descriptors through /proc")
def test_the_log_keeps_one_descriptor_while_it_lives_and_none_after(tmp_path):
    def open_here() -> int:
        found = 0
        for fd in os.listdir("/proc/self/fd"):
            with contextlib.suppress(OSError):  # the listing's own descriptor is gone by now
                found += os.readlink(f"/proc/self/fd/{fd}").startswith(str(tmp_path))
        return found

    log = ResponseLog(tmp_path / "episodes" / "e" / RESPONSES)
    model = Kept(ScriptedModel(default="ok"), log)
    for n in range(5):
        model.generate(PROMPT.extended(Message("user", str(n))))
    assert open_here() == 1
    assert len(read_kept(tmp_path)) == 5  # each line is on disk as it is written
    del model, log
    gc.collect()
    assert open_here() == 0
