"""Render one PoS episode's belief trajectory as readable text: per step the action, audit verdict, progress,
health, diagnosis, recovery directive and tokens per role, then the committed belief.

    .venv/bin/python scripts/show_belief.py results/toy/pos/scripted/<run>/episodes/toy__000 [--worlds]
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path
from typing import Any

from pos_bench import events


def belief_lines(belief: dict[str, Any]) -> list[str]:
    world = belief["world"]
    out = [f"    goal: {belief['goal']['specification'] or belief['goal']['user_input']}"]
    for e in world["entities"].values():
        states = [s for s in world["states"].values() if s["entity_id"] == e["entity_id"]]
        facts = "; ".join(
            s["description"]
            + ("" if s["source_type"] == "observed" else f" (p={s['probability']}: {s['reason']})")
            for s in states
        )
        out.append(f"    {e['entity_id']} {e['name']} [{e['entity_type']}] {facts}")
    for r in world["relations"].values():
        out.append(f"    {r['relation_id']}: {r['source_id']} --{r['description']}--> {r['target_id']}")
    for kind in ("epistemic", "achievement"):
        for g in belief[f"{kind}_gaps"]:
            out.append(f"    {kind} gap: {g['target']} ({g['reason']})")
    out.append(f"    Active Gap: {belief['frontier']}")
    return out


def render(folder: Path, *, worlds: bool) -> str:
    tokens: dict[str, int] = defaultdict(int)
    lines: list[str] = []
    done = folder / "result.json"
    # an episode still running (or killed mid-way) has events but no result.json yet
    result = json.loads(done.read_text(encoding="utf-8")) if done.exists() else {}
    history = result.get("report", {}).get("belief_update_history", [])
    if history and worlds:
        lines += ["step -1 (init):", *belief_lines(history[0]["final_belief"])]
    for event in events.read(folder / "events.jsonl"):
        if isinstance(event, events.Call):
            tokens[event.role] += event.usage.input_tokens + event.usage.output_tokens
        elif isinstance(event, events.Step):
            text = (event.observation or {}).get("text", "")
            lines.append(f"\nstep {event.turn}: {json.dumps(event.action)} -> {text[:160]}")
        elif isinstance(event, events.Memory):
            lines += step_lines(event.record, worlds)
            lines.append("  tokens: " + ", ".join(f"{role} {n}" for role, n in sorted(tokens.items())))
            tokens.clear()
        elif isinstance(event, events.Error):
            lines.append(f"ERROR {event.error}")
    if not result:
        lines.append("\noutcome: none yet (no result.json: the episode is still running or was killed)")
        return "\n".join(lines)
    lines.append(
        f"\noutcome: status={result.get('status')} success={result.get('success')} steps={result.get('steps')}"
    )
    return "\n".join(lines)


def step_lines(record: dict[str, Any], worlds: bool) -> list[str]:
    if "context_error" in record:
        return [f"  context error: {record['context_error']}"]
    out = [f"  belief update: {record['status']}"]
    for audit in record["audit"]:
        issue = (
            audit["issues"][0]["problem"] if audit["issues"] else ("failed" if audit["failed"] else "none")
        )
        out.append(f"  audit ({audit['audit_mode']}): issue={issue} ungrounded={audit['ungrounded']}")
    p = record["progress"]
    out.append(f"  progress: u={p['progress']} via {p['scoring_method']} ({p['reason'][:100]})")
    if record["health"]:
        h = record["health"]
        out.append(
            f"  health: P_E={h['persistence_e']:.2f} P_A={h['persistence_a']:.2f} S={h['stagnation']:.2f} "
            f"R={h['recurrence']:.2f} H={h['health_score']:.2f} ready={h['window_ready']} "
            f"diagnosis={h['trapping_pattern']}/{h['gap_dimension']}"
        )
    for ended in record["recovery_ended"]:
        out.append(f"  recovery ended: {ended['status']}")
    if record["recovery"]:
        out.append(f"  recovery directive: {record['recovery']['instruction'][:300]}")
    if worlds:
        out += belief_lines(record["committed_belief"])
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("episode", type=Path, help="an episode folder holding events.jsonl and result.json")
    parser.add_argument("--worlds", action="store_true", help="also print each committed belief")
    args = parser.parse_args()
    print(render(args.episode, worlds=args.worlds))


if __name__ == "__main__":
    main()
