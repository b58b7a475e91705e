"""Prefix-stable prompts (issue 24): for every method, on the toy household (a command list) and on
`rca_synthetic` (a tool catalog), each policy prompt begins with the previous one's stable part, so a server's
prefix cache reuses it.

The stable part of a policy prompt, precisely: the system message, and the leading part of the user message
that holds the tool catalog (on a tool benchmark: the user message opens with it), the benchmark's format example,
the `Task: …` line, and PoS's `Goal:` section and action contract, wherever a method shows them. Turn t's prompt must have the same system message as turn
t−1's, and its user message must share with turn t−1's a common beginning that covers all of that stable part.
Repair requests (a prompt extended with the failed reply) are not policy turns and are left out. A method that
keeps a conversation (compaction) sends it as several messages; its stable part is in the first user message too.
"""

from __future__ import annotations

import itertools
import os

import pytest
from hydra.utils import instantiate

from pos_bench.loop import play
from pos_bench.models.scripted import ScriptedModel
from pos_bench.pos.view import ACTION_CONTRACT
from pos_bench.prompting import repair_request
from pos_bench.transcript import Recorded, Transcript
from pos_bench.types import Prompt
from tests.golden.test_golden import BENCHES, METHODS, composed, scripted_reply


def policy_prompts(bench: str, method: str) -> tuple[list[Prompt], str]:
    """The policy prompts of one short episode (scripted replies) and the benchmark's format example."""
    plain, benchmark = composed(bench, method)
    task = benchmark.tasks()[0]
    scripted = ScriptedModel(default=scripted_reply)
    model = Recorded(scripted, Transcript())
    env = benchmark.make_env(model)
    try:
        with instantiate(plain["method"], _convert_="all")(model=model) as built:
            if built.unsupported(env.reset(task)):
                pytest.skip(f"{method} does not run on {bench}")
            play(
                task,
                env,
                built,
                model,
                brief=benchmark.brief,
                max_turns=benchmark.max_turns,
                log=Transcript(),
            )
    finally:
        env.close()
    prompts = [p for role, p in scripted.prompts if role == "agent" and not is_repair(p)]
    return prompts, benchmark.brief.example


REPAIRS = tuple(
    repair_request("{}", missing_action=missing).split("{", 1)[0][:40] for missing in (False, True)
)


def is_repair(prompt: Prompt) -> bool:
    """A prompt extended with a failed reply and the loop's repair request (not a policy turn). Methods that
    keep a conversation (compaction) send several messages every turn, so the request's words tell it."""
    last = prompt.messages[-1]
    return (
        last.role == "user" and last.content.startswith(REPAIRS) and prompt.messages[-2].role == "assistant"
    )


def stable_end(user: str, example: str) -> int:
    """Where the stable part of a policy user message ends (see the module docstring)."""
    ends = [0]
    if user.startswith("Available tools:"):
        ends.append(len(user.split("\n\n", 1)[0]))
    if example and example in user:
        ends.append(user.index(example) + len(example))
    start = user.find("Task: ")
    if start >= 0:
        line_end = user.find("\n", start)
        ends.append(len(user) if line_end < 0 else line_end)
    goal = user.find("Goal:\n")
    if goal >= 0:
        section_end = user.find("\n\n", goal)
        ends.append(len(user) if section_end < 0 else section_end)
    if ACTION_CONTRACT in user:
        ends.append(user.index(ACTION_CONTRACT) + len(ACTION_CONTRACT))
    return max(ends)


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("bench", sorted(BENCHES))
def test_each_policy_prompt_extends_the_stable_part_of_the_previous_one(bench, method):
    prompts, example = policy_prompts(bench, method)
    assert len(prompts) >= 2, f"{method} on {bench} made fewer than two policy calls"
    if bench == "rca_synthetic":
        assert all(p.messages[1].content.startswith("Available tools:") for p in prompts)
    for turn, (before, now) in enumerate(itertools.pairwise(prompts), start=1):
        assert now.messages[0] == before.messages[0], f"turn {turn}: the system message changed"
        old, new = before.messages[1].content, now.messages[1].content
        shared = len(os.path.commonprefix([old, new]))
        end = stable_end(old, example)
        assert end > 0
        assert shared >= end, (
            f"turn {turn}: the user message changes at character {shared}, inside the stable part (0–{end}): "
            f"…{old[max(0, shared - 80) : shared + 40]!r}"
        )
