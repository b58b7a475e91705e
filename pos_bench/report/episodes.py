"""An episode's `events.jsonl` → the records the report shows: turns (prompts sent, replies, action,
observation, tokens per role), for a method that returns PoS memory records the belief timeline, and where
the environment recorded its truth, the truth beside the method's claims with each claim's verdict.

Texts go into a shared `Strings` table and records hold their index, so a system prompt repeated on every
call is stored once per report. Unknown event kinds are kept as notes, so a newer runner's events still show.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from operator import attrgetter
from typing import Any

from pos_bench import events
from pos_bench.truth import EXISTS, Claim, Fact, WorldTruth, judge
from pos_bench.types import Usage

EMBED_CAP = 20_000
"""Characters of one text (a message, a reply, an observation) the page embeds; the rest stays in the
episode's `events.jsonl`, which the episode links. A 90 MB transcript makes a page of a few MB."""


class Strings:
    """Interned texts: `add` returns the index of a text in `items`; a text over `cap` characters is cut,
    marked with its size."""

    def __init__(self, cap: int = EMBED_CAP) -> None:
        self.items: list[str] = []
        self._index: dict[str, int] = {}
        self.cap = cap

    def add(self, text: Any) -> int:
        if not isinstance(text, str):
            text = json.dumps(text, ensure_ascii=False, indent=1)
        if len(text) > self.cap:
            text = (
                f"{text[: self.cap]}\n[cut here: {len(text):,} characters in all; "
                "the whole text is in the episode's events.jsonl]"
            )
        if text not in self._index:
            self._index[text] = len(self.items)
            self.items.append(text)
        return self._index[text]


def _action_text(action: Any) -> str:
    if isinstance(action, Mapping):
        return f"{action.get('name')}({json.dumps(action.get('arguments', {}), ensure_ascii=False)})"
    return str(action)


def _call(event: events.Call | events.CallError, strings: Strings) -> dict[str, Any]:
    prompt = event.prompt or {}
    usage = event.usage if isinstance(event, events.Call) else Usage()
    return {
        "role": str(event.role),
        "messages": [
            [m.get("role", "?"), strings.add(m.get("content", ""))] for m in prompt.get("messages", [])
        ],
        "reply": strings.add(event.reply if isinstance(event, events.Call) else event.error),
        "error": isinstance(event, events.CallError),
        "in": usage.input_tokens,
        "out": usage.output_tokens,
        "cached": isinstance(event, events.Call) and bool(event.cached),
    }


def _new_turn(label: str) -> dict[str, Any]:
    return {"label": label, "calls": [], "notes": [], "tokens": {}}


FACT_ORDER = attrgetter("subject", "attribute", "value")
"""`Fact`'s own order (its fields compared in turn) as a sort key: a truth is sorted at every step, and the
dataclass's `__lt__` called for each comparison was a third of the cost of drawing a truth."""


def _fact_text(fact: Fact) -> str:
    return f"{fact.subject} · {fact.attribute} = {fact.value}"


def _claim_text(claim: Claim) -> str:
    said = " ".join(t for t in (claim.subject, claim.text, f"→ {claim.object}" if claim.object else "") if t)
    how = ", ".join(x for x in (claim.source, claim.confidence) if x)
    return f"{said} (p={claim.probability:g}{', ' + how if how else ''})"


def _instead(fact: Fact, truth: WorldTruth) -> str:
    """What the truth holds in place of a false fact."""
    if fact.attribute == EXISTS:
        return " (truth: no such entity)"
    return f" (truth: {', '.join(sorted(truth.values(fact.subject, fact.attribute)))})"


def beside_truth(claims: Iterable[Claim], truth: WorldTruth, strings: Strings) -> list[list[Any]]:
    """Each claim with its verdict (false: one of its facts is false; true: all scored facts true;
    unscored) and what was read from it, a false fact followed by what the truth holds instead."""
    out = []
    for claim in claims:
        judged = judge((claim,), truth)
        verdicts = {j.verdict for j in judged}
        verdict = "false" if "false" in verdicts else "true" if "true" in verdicts else "unscored"
        read = [
            _fact_text(j.fact) + (_instead(j.fact, truth) if j.verdict == "false" else "") for j in judged
        ]
        out.append([strings.add(_claim_text(claim)), verdict, strings.add("; ".join(read))])
    return out


class Timeline:
    """Groups events into turns: the calls that built a decision, the step, and the memory update after it.
    Calls made before the first policy call (belief initialisation) form a `start` group. A turn's truth and
    claims (recorded after its step and its memory update) join the turn of that step."""

    def __init__(self, strings: Strings):
        self.strings = strings
        self.out: list[dict[str, Any]] = []
        self.current = _new_turn("start")
        self.world: WorldTruth | None = None
        self.truth_turn: dict[str, Any] | None = None
        self.said: tuple[events.Truth, int] | None = None
        """The last truth and the index of its facts' text."""

    def close_turn(self) -> None:
        self.out.append(self.current)
        self.current = _new_turn("turn")

    def call(self, event: events.Call | events.CallError) -> None:
        call = _call(event, self.strings)
        current = self.current
        if call["role"] == "agent" and (
            "step" in current
            or (not self.out and current["calls"] and not any(c["role"] == "agent" for c in current["calls"]))
        ):
            self.close_turn()
        self.current["calls"].append(call)
        tokens = self.current["tokens"]
        tokens[call["role"]] = tokens.get(call["role"], 0) + call["in"] + call["out"]

    def step(self, event: events.Step) -> None:
        if "step" in self.current:
            self.close_turn()
        add = self.strings.add
        self.current.update(
            turn=event.turn,
            step={
                "thought": add(event.thought or ""),
                "action": add(_action_text(event.action)),
                "observation": add((event.observation or {}).get("text", "")),
            },
        )

    def memory(self, event: events.Memory) -> None:
        self.current["memory"] = memory_view(event.record or {}, self.strings)
        self.close_turn()

    def compaction(self, event: events.Compaction) -> None:
        """A compaction happens before its turn's policy call, so it opens that turn."""
        if "step" in self.current:
            self.close_turn()
        applied = event.applied if event.applied != event.strategy else ""
        lines = [
            (
                f"{event.strategy}{' → ' + applied if applied else ''} ({event.trigger}): "
                f"{event.tokens_before:,} → {event.tokens_after:,} tokens, "
                f"{event.messages_before} → {event.messages_after} messages"
            )
        ]
        if event.fallback_reason:
            lines.append(f"fallback: {event.fallback_reason}")
        if event.summary:
            lines.append(f"summary:\n{event.summary}")
        self.current["notes"].append(["compaction", self.strings.add("\n".join(lines))])

    def truth(self, event: events.Truth) -> None:
        # the world mostly stays as it was from one step to the next (ALFWorld: 24 steps in 25), and a truth
        # leaves out what did not change (an older one restates all of it): the world and its text are made again
        # only when the truth says something new
        if self.said is None or not event.restates(self.said[0]):
            self.world = event.world(self.world)
            text = "\n".join(_fact_text(f) for f in sorted(self.world.facts, key=FACT_ORDER))
            self.said = (event, self.strings.add(text))
        self.truth_turn = self.current
        self.current["truth"] = {"step": event.step, "facts": self.said[1]}

    def claims(self, event: events.Claims) -> None:
        if not event.keeps_state:
            self.current["notes"].append(
                ["claims", self.strings.add("this method keeps no state of the world")]
            )
            return
        if self.world is None or self.truth_turn is None:
            return
        self.truth_turn["claims"] = beside_truth(event.claims, self.world, self.strings)

    def note(self, event: events.Event) -> None:
        add = self.strings.add
        notes = self.current["notes"]
        if isinstance(event, events.Reset):
            notes.append(["reset", add((event.observation or {}).get("text", ""))])
        elif isinstance(event, events.Score):
            notes.append(["score", add(event.score)])
        elif isinstance(event, events.Error):
            notes.append(["error", add(f"{event.error}\n\n{event.traceback or ''}")])
        elif isinstance(event, events.Other):
            notes.append([event.name, add(dict(event.data))])
        else:
            detail = {k: v for k, v in events.row(event, now=0).items() if k not in ("kind", "time")}
            notes.append([event.kind, add(detail)])

    def finished(self) -> list[dict[str, Any]]:
        current = self.current
        if current["calls"] or current["notes"] or "step" in current:
            self.out.append(current)
        for i, turn in enumerate(self.out):
            if turn["label"] == "turn":
                turn["label"] = f"turn {turn.get('turn', i)}"
        return self.out


def turns(episode: Iterable[events.Event], strings: Strings) -> list[dict[str, Any]]:
    """An episode's events grouped into the report's turns (`Timeline`)."""
    timeline = Timeline(strings)
    for e in episode:
        if isinstance(e, (events.Call, events.CallError)):
            timeline.call(e)
        elif isinstance(e, events.Step):
            timeline.step(e)
        elif isinstance(e, events.Memory):
            timeline.memory(e)
        elif isinstance(e, events.Compaction):
            timeline.compaction(e)
        elif isinstance(e, events.Truth):
            timeline.truth(e)
        elif isinstance(e, events.Claims):
            timeline.claims(e)
        else:
            timeline.note(e)
    return timeline.finished()


def gap_text(gap: Any) -> str:
    if isinstance(gap, Mapping):
        return f"{gap.get('gap_type', '?')}: {gap.get('target', '')}"
    return "none" if gap is None else str(gap)


def issue_text(issue: Any) -> str:
    """An audit issue in one line: problem, targets, and the quoted evidence."""
    if not isinstance(issue, Mapping):
        return str(issue)
    where = (
        f" (step {issue.get('evidence_step')}: {issue.get('evidence_quote', '')!r})"
        if "evidence_step" in issue
        else ""
    )
    targets = ", ".join(map(str, issue.get("targets", [])))
    return f"{issue.get('problem', '')} [{issue.get('issue_type', '')}{': ' + targets if targets else ''}]{where}"


HEALTH_SHOWN = (
    "health_score",
    "persistence_e",
    "persistence_a",
    "stagnation",
    "recurrence",
    "health_threshold",
    "trapped",
    "trapping_pattern",
    "gap_dimension",
    "window_ready",
)


def memory_view(record: Mapping[str, Any], strings: Strings) -> dict[str, Any]:
    """The parts of a PoS memory record the timeline shows; other methods' records are kept as JSON text."""
    view = events.PosMemory.of(record)
    if view is None:
        return {"other": strings.add(record)}
    health = view.health
    return {
        "step": view.step,
        "status": view.status or "context error",
        "context_error": view.context_error,
        "audits": [
            {
                "mode": a.get("audit_mode"),
                "failed": bool(a.get("failed")),
                "issues": [strings.add(issue_text(i)) for i in a.get("issues", [])],
            }
            for a in view.audit
        ],
        "progress": view.progress,
        "health": None if health is None else {k: health.get(k) for k in HEALTH_SHOWN},
        "recovery": None if view.recovery is None else strings.add(view.recovery.get("instruction", "")),
        "recovery_ended": [r.get("status") for r in view.recovery_ended],
        "active_gap": strings.add(gap_text(view.active_gap)) if view.has_active_gap else None,
        "belief_text": strings.add(view.belief_text) if view.belief_text else None,
    }
