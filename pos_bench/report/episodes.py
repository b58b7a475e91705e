"""An episode's `events.jsonl` → the records the report shows: turns (prompts sent, replies, action,
observation, tokens per role) and, for a method that returns PoS memory records, the belief timeline.

Texts go into a shared `Strings` table and records hold their index, so a system prompt repeated on every
call is stored once per report. Unknown event kinds are kept as notes, so a newer runner's events still show.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any


class Strings:
    """Interned texts: `add` returns the index of a text in `items`."""

    def __init__(self) -> None:
        self.items: list[str] = []
        self._index: dict[str, int] = {}

    def add(self, text: Any) -> int:
        if not isinstance(text, str):
            text = json.dumps(text, ensure_ascii=False, indent=1)
        if text not in self._index:
            self._index[text] = len(self.items)
            self.items.append(text)
        return self._index[text]


def _action_text(action: Any) -> str:
    if isinstance(action, Mapping):
        return f"{action.get('name')}({json.dumps(action.get('arguments', {}), ensure_ascii=False)})"
    return str(action)


def _call(event: Mapping[str, Any], strings: Strings) -> dict[str, Any]:
    prompt = event.get("prompt") or {}
    usage = event.get("usage") or {}
    return {
        "role": str(event.get("role", "?")),
        "messages": [
            [m.get("role", "?"), strings.add(m.get("content", ""))] for m in prompt.get("messages", [])
        ],
        "reply": strings.add(event.get("reply", event.get("error", ""))),
        "error": event.get("kind") == "call_error",
        "in": int(usage.get("input_tokens", 0)),
        "out": int(usage.get("output_tokens", 0)),
        "cached": bool(event.get("cached", False)),
    }


def _new_turn(label: str) -> dict[str, Any]:
    return {"label": label, "calls": [], "notes": [], "tokens": {}}


def turns(events: Iterable[Mapping[str, Any]], strings: Strings) -> list[dict[str, Any]]:
    """Group events into turns: the calls that built a decision, the step, and the memory update after it.
    Calls made before the first policy call (belief initialisation) form a `start` group."""
    out: list[dict[str, Any]] = []
    current = _new_turn("start")
    for e in events:
        kind = e.get("kind")
        if kind in ("call", "call_error"):
            call = _call(e, strings)
            if call["role"] == "agent" and (
                "step" in current
                or (not out and current["calls"] and not any(c["role"] == "agent" for c in current["calls"]))
            ):
                out.append(current)
                current = _new_turn("turn")
            current["calls"].append(call)
            tokens = current["tokens"]
            tokens[call["role"]] = tokens.get(call["role"], 0) + call["in"] + call["out"]
        elif kind == "step":
            if "step" in current:
                out.append(current)
                current = _new_turn("turn")
            current.update(
                turn=e.get("turn"),
                step={
                    "thought": strings.add(e.get("thought", "")),
                    "action": strings.add(_action_text(e.get("action"))),
                    "observation": strings.add((e.get("observation") or {}).get("text", "")),
                },
            )
        elif kind == "memory":
            current["memory"] = memory_view(e.get("record") or {}, strings)
            out.append(current)
            current = _new_turn("turn")
        elif kind == "reset":
            current["notes"].append(["reset", strings.add((e.get("observation") or {}).get("text", ""))])
        elif kind == "score":
            current["notes"].append(["score", strings.add(e.get("score"))])
        elif kind == "error":
            current["notes"].append(["error", strings.add(f"{e.get('error')}\n\n{e.get('traceback', '')}")])
        else:
            detail = {k: v for k, v in e.items() if k not in ("kind", "time")}
            current["notes"].append([str(kind), strings.add(detail)])
    if current["calls"] or current["notes"] or "step" in current:
        out.append(current)
    for i, turn in enumerate(out):
        if turn["label"] == "turn":
            turn["label"] = f"turn {turn.get('turn', i)}"
    return out


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


def memory_view(record: Mapping[str, Any], strings: Strings) -> dict[str, Any]:
    """The parts of a PoS memory record the timeline shows; other methods' records are kept as JSON text."""
    if "status" not in record and "context_error" not in record:
        return {"other": strings.add(record)}
    health = record.get("health") or None
    recovery = record.get("recovery") or None
    committed = record.get("committed_belief") or {}
    return {
        "step": record.get("step"),
        "status": record.get("status", "context error"),
        "context_error": record.get("context_error"),
        "audits": [
            {
                "mode": a.get("audit_mode"),
                "failed": bool(a.get("failed")),
                "issues": [strings.add(issue_text(i)) for i in a.get("issues", [])],
            }
            for a in record.get("audit", [])
        ],
        "progress": (record.get("progress") or {}).get("progress"),
        "health": None
        if health is None
        else {
            k: health.get(k)
            for k in (
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
        },
        "recovery": None if recovery is None else strings.add(recovery.get("instruction", "")),
        "recovery_ended": [r.get("status") for r in record.get("recovery_ended", [])],
        "active_gap": strings.add(gap_text(committed.get("frontier"))) if "frontier" in committed else None,
        "belief_text": strings.add(record["belief_text"]) if record.get("belief_text") else None,
    }
