"""HiAgent: working memory chunked by subgoals (SPEC-BASE §6).

The policy states a subgoal (decision field `subgoal`) when none is open or the last one is done. Steps belong
to the open subgoal; when a new subgoal opens, the previous one collapses to a one-line summary (one
`summarizer` call, cached at that moment) and only the current subgoal keeps its raw steps. `retrieve(i)`
is a meta-action that restores finished subgoal i in full for the rest of the current subgoal. Meta-actions
use no environment step and no policy turn: the loop answers them within the turn (SPEC-BASE §2.2), which
the method cannot change; it only caps them per turn.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from baselines.meta_actions import MetaOffer, memory_prompt, meta_ids
from pos_bench.prompting import example_section, render_observation
from pos_bench.protocols import MethodBase, Model
from pos_bench.truth import Claim
from pos_bench.types import Brief, Message, Observation, Prompt, Step, Task, action_json

INSTRUCTIONS = (
    "Work through subgoals. A subgoal is one line naming a milestone on the way to the task. Put it in the "
    '"subgoal" field of the reply that starts it, together with that reply\'s first action; leave "subgoal" '
    "out (null) while the current subgoal is still being worked on, and turn it into executable actions. "
    "When no subgoal is open or the current one is done, state the next one. Finished subgoals are shown as "
    "one-line summaries; `retrieve(N)` brings back the steps of finished subgoal N without acting."
)

SUMMARIZER_SYSTEM = "You report, in one line, how one subgoal of an agent's task went."


@dataclass
class Subgoal:
    id: int
    text: str
    steps: list[dict[str, Any]] = field(default_factory=list)
    summary: str | None = None


def steps_json(steps: list[dict[str, Any]]) -> str:
    return json.dumps(steps, indent=1, ensure_ascii=False) if steps else "none yet"


class HiAgent(MethodBase):
    def __init__(
        self,
        model: Model,
        *,
        summarize: Literal["llm", "last_obs"] = "llm",
        summary_cache: bool = True,
        max_retrievals_per_turn: int = 2,
        summarizer_max_tokens: int = 256,
        max_json_retries: int = 2,
    ):
        if summarize not in ("llm", "last_obs"):
            raise ValueError(f"summarize must be 'llm' or 'last_obs', got {summarize!r}")
        if max_retrievals_per_turn < 0 or summarizer_max_tokens < 1 or max_json_retries < 0:
            raise ValueError(
                "need max_retrievals_per_turn ≥ 0, summarizer_max_tokens ≥ 1, max_json_retries ≥ 0; got "
                f"{max_retrievals_per_turn}, {summarizer_max_tokens}, {max_json_retries}"
            )
        self.model = model
        self.summarize = summarize
        self.summary_cache = summary_cache
        """True: summarise once when a subgoal closes; False: re-summarise every finished subgoal at every
        prompt, as the original code does."""
        self.max_retrievals_per_turn = max_retrievals_per_turn
        self.summarizer_max_tokens = summarizer_max_tokens
        self.max_json_retries = max_json_retries
        self.preamble: list[dict[str, Any]] = []
        """Steps taken before the first subgoal."""
        self.subgoals: list[Subgoal] = []
        self.retrieved: list[int] = []
        self.retrievals_this_turn = 0
        self.notes: list[str] = []
        self.counts = {"retrieve": 0, "retrieve_invalid": 0, "summaries": 0, "ignored_meta_subgoals": 0}

    def start(self, task: Task, brief: Brief, first: Observation) -> None:
        self.brief = brief
        self.goal = first.goal
        self.first = first.text

    @property
    def finished(self) -> list[Subgoal]:
        return self.subgoals[:-1]

    def _summary(self, subgoal: Subgoal) -> str:
        if self.summary_cache and subgoal.summary is not None:
            return subgoal.summary
        last = subgoal.steps[-1]["observation"] if subgoal.steps else ""
        if self.summarize == "last_obs":
            return last
        lines = "\n".join(
            f"- {json.dumps(s['action'], ensure_ascii=False)} → {s['observation']}" for s in subgoal.steps
        )
        request = (
            f"Task: {self.goal}\nSubgoal: {subgoal.text}\nActions and what they returned:\n{lines}\n\n"
            "Write one line that summarises what these observations showed that matters for the subgoal, and "
            "say whether the subgoal was met."
        )
        prompt = Prompt(
            messages=(Message("system", SUMMARIZER_SYSTEM), Message("user", request)),
            max_tokens=self.summarizer_max_tokens,
        )
        self.counts["summaries"] += 1
        text = self.model.generate(prompt, role="summarizer").text
        line = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
        return line or last

    def _memory_sections(self) -> list[str]:
        sections = [f"Initial observation:\n{self.first}"]
        if self.preamble:
            sections.append(f"Steps before the first subgoal:\n{steps_json(self.preamble)}")
        if self.finished:
            lines = []
            for sg in self.finished:
                if sg.id in self.retrieved:
                    lines.append(f"[{sg.id}] {sg.text} (retrieved):\n{steps_json(sg.steps)}")
                else:
                    lines.append(f"[{sg.id}] {sg.text} — {self._summary(sg)}")
            sections.append("Finished subgoals:\n" + "\n".join(lines))
        if self.subgoals:
            current = self.subgoals[-1]
            sections.append(
                f"Current subgoal [{current.id}]: {current.text}\nIts steps:\n{steps_json(current.steps)}"
            )
        else:
            sections.append('No subgoal is open yet: state one in the "subgoal" field.')
        return sections

    def _retrieve_offer(self) -> MetaOffer:
        options = [sg.id for sg in self.finished if sg.id not in self.retrieved]
        if self.retrievals_this_turn >= self.max_retrievals_per_turn:
            options = []
        return MetaOffer(
            name="retrieve",
            commands=tuple(f"retrieve({i})" for i in options),
            description="Show the steps of finished subgoals again, without acting (no environment step).",
            parameters={
                "type": "object",
                "properties": {
                    "subgoal_ids": {"type": "array", "items": {"type": "integer", "enum": options}}
                },
                "required": ["subgoal_ids"],
            },
        )

    def prompt(self, obs: Observation) -> Prompt:
        sections = [
            example_section(self.brief),
            f"Task: {self.goal}",
            INSTRUCTIONS,
            *self._memory_sections(),
            "\n".join(self.notes),
            f"Current observation:\n{render_observation(obs)}",
        ]
        return memory_prompt(
            self.brief,
            obs,
            sections,
            [self._retrieve_offer()],
            # With no subgoal open one must be stated now, so the schema requires it; later it is optional.
            extra_fields={"subgoal": (str | None, None) if self.subgoals else (str, ...)},
            max_json_retries=self.max_json_retries,
        )

    def _retrieve(self, step: Step) -> Mapping[str, Any]:
        self.counts["retrieve"] += 1
        self.retrievals_this_turn += 1
        if step.decision.extra.get("subgoal"):
            self.counts["ignored_meta_subgoals"] += 1  # a subgoal opens together with an action only
        finished = {sg.id for sg in self.finished}
        ids = meta_ids(step.decision.meta, "subgoal_ids")
        valid = [i for i in ids if i in finished]
        if not valid:
            self.counts["retrieve_invalid"] += 1
            self.notes.append(f"Retrieve request {step.decision.meta!r} named no finished subgoal.")
        self.retrieved += [i for i in valid if i not in self.retrieved]
        return {"retrieve": ids, "restored": valid}

    def update(self, step: Step) -> Mapping[str, Any] | None:
        if step.after is None:
            return self._retrieve(step)
        self.retrievals_this_turn, self.notes = 0, []
        record: dict[str, Any] = {}
        stated = step.decision.extra.get("subgoal")
        stated = stated.strip() if isinstance(stated, str) else ""
        if stated and (not self.subgoals or stated != self.subgoals[-1].text):
            if self.subgoals:
                closed = self.subgoals[-1]
                if self.summary_cache:
                    closed.summary = self._summary(closed)
                record["closed"] = {"id": closed.id, "summary": closed.summary}
            self.subgoals.append(Subgoal(len(self.subgoals) + 1, stated))
            self.retrieved = []
            record["opened"] = {"id": len(self.subgoals), "text": stated}
        entry = {
            "thought": step.decision.thought,
            "action": action_json(step.decision.action),
            "observation": step.after.text,
        }
        (self.subgoals[-1].steps if self.subgoals else self.preamble).append(entry)
        return record or None

    def report(self) -> Mapping[str, Any]:
        return {
            **self.counts,
            "meta_actions": {"retrieve": self.counts["retrieve"]},
            "subgoals": len(self.subgoals),
            "summary_cache": self.summary_cache,
            "summarize": self.summarize,
            "meta_actions_use_turns": False,
        }

    def claims(self) -> tuple[Claim, ...]:
        """The summaries of finished subgoals already written (never a new summariser call), as free-text
        claims; with `summary_cache=False` none is kept, so there are none (`ClaimingMethod`)."""
        return tuple(
            Claim("", sg.summary, source="subgoal summary", ref=f"subgoal {sg.id}")
            for sg in self.finished
            if sg.summary
        )
